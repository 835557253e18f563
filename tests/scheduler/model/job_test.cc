#include "scheduler/model/job.h"

#include <gtest/gtest.h>

#include "scheduler/model/pool.h"

namespace frugal::model {
namespace {

TEST(JobModelTest, StatesRoundTripThroughText) {
  for (auto s : {JobState::kPending, JobState::kHeld, JobState::kRunning, JobState::kSucceeded,
                 JobState::kFailed, JobState::kCancelled, JobState::kTimedOut}) {
    EXPECT_EQ(*ParseJobState(ToString(s)), s);
  }
  EXPECT_FALSE(ParseJobState("done").ok());
}

TEST(JobModelTest, OnlyEndedStatesAreTerminal) {
  EXPECT_FALSE(IsTerminal(JobState::kPending));
  EXPECT_FALSE(IsTerminal(JobState::kRunning));
  EXPECT_FALSE(IsTerminal(JobState::kHeld));
  EXPECT_TRUE(IsTerminal(JobState::kSucceeded));
  EXPECT_TRUE(IsTerminal(JobState::kTimedOut));
}

TEST(JobModelTest, PriorityClassesRankHighestFirst) {
  EXPECT_EQ(*PriorityRank("critical"), 0);
  EXPECT_EQ(*PriorityRank("low"), 3);
  auto bad = PriorityRank("urgent");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().field(), "priority");
}

TEST(JobModelTest, CapacityKindsAndTolerancesParse) {
  EXPECT_EQ(*ParseCapacityKind("spot"), CapacityKind::kSpot);
  EXPECT_FALSE(ParseCapacityKind("preemptible").ok());
  EXPECT_EQ(*ParseTolerance("checkpointed"), Tolerance::kCheckpointed);
  EXPECT_FALSE(ParseTolerance("maybe").ok());
}

}  // namespace
}  // namespace frugal::model
