// The worker's attempt journal (decision 0036): what one life puts there, the next one reads
// back, whatever a crash cut short; forgotten attempts stay forgotten; a file of mostly dead
// lines is rewritten; and the state.json files of an older worker are taken in.
#include "worker/attempt_journal.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/testing/temp_dir.h"

namespace frugal::worker {
namespace {

AttemptState State(std::int64_t id, std::optional<protocol::Outcome> outcome = std::nullopt) {
  AttemptState s;
  s.attempt_id = id;
  s.job_id = 1000 + id;
  s.lease_epoch = 3;
  s.fence = std::string(64, 'a' + static_cast<char>(id % 6));
  s.pgid = 4000 + static_cast<pid_t>(id);
  s.leader_start = 77;
  s.outcome = outcome;
  if (outcome) s.exit_code = 0;
  return s;
}

std::size_t Lines(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

TEST(AttemptJournalTest, TheNextLifeReadsWhatWasSyncedAndNotWhatWasForgotten) {
  testing::TempDir dir;
  {
    AttemptJournal j;
    ASSERT_TRUE(j.Open(dir.path()).ok());
    j.Put(State(1));
    j.Put(State(2));
    j.Put(State(1, protocol::Outcome::kSucceeded));  // the later record wins
    j.Forget(2);
    j.Put(State(3));
    ASSERT_TRUE(j.Sync().ok());
    j.Put(State(4));  // never synced: a crash loses it (the keeper kills what it started)
  }
  struct stat st {};
  ASSERT_EQ(stat((dir.path() + "/attempts.journal").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u) << "jobs must not read fences";
  AttemptJournal next;
  ASSERT_TRUE(next.Open(dir.path()).ok());
  const auto& got = next.attempts();
  ASSERT_EQ(got.size(), 2u);
  ASSERT_TRUE(got.count(1) && got.count(3));
  EXPECT_EQ(got.at(1).outcome, protocol::Outcome::kSucceeded);
  EXPECT_EQ(got.at(1).fence, State(1).fence);
  EXPECT_EQ(got.at(3).pgid, State(3).pgid);
  EXPECT_FALSE(got.at(3).outcome.has_value());
}

TEST(AttemptJournalTest, ALineCutShortByACrashIsSkipped) {
  testing::TempDir dir;
  {
    AttemptJournal j;
    ASSERT_TRUE(j.Open(dir.path()).ok());
    j.Put(State(1));
    j.Put(State(2));
    ASSERT_TRUE(j.Sync().ok());
  }
  {
    std::ofstream out(dir.path() + "/attempts.journal", std::ios::app);
    out << R"({"forget":1})" << "\n" << R"({"put":{"attempt_id":2,"job_id":)";  // torn
  }
  AttemptJournal next;
  ASSERT_TRUE(next.Open(dir.path()).ok());
  EXPECT_EQ(next.attempts().count(1), 0u);
  ASSERT_EQ(next.attempts().count(2), 1u);
  EXPECT_EQ(next.attempts().at(2).job_id, State(2).job_id);
  // Writing on after the torn line: the new record starts a line of its own.
  next.Put(State(5));
  ASSERT_TRUE(next.Sync().ok());
  AttemptJournal third;
  ASSERT_TRUE(third.Open(dir.path()).ok());
  EXPECT_EQ(third.attempts().size(), 2u);
  EXPECT_EQ(third.attempts().count(5), 1u);
}

TEST(AttemptJournalTest, AFileOfMostlyForgottenAttemptsIsRewrittenWithTheLiveOnes) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/attempts.journal";
  AttemptJournal j;
  ASSERT_TRUE(j.Open(dir.path()).ok());
  j.Put(State(1));  // lives throughout
  for (std::int64_t id = 10; id < 1010; ++id) {
    j.Put(State(id));
    j.Put(State(id, protocol::Outcome::kFailed));
    j.Forget(id);
    ASSERT_TRUE(j.Sync().ok());
  }
  EXPECT_LT(Lines(path), 1100u) << "3,001 lines were written; the file was never rewritten";
  AttemptJournal next;
  ASSERT_TRUE(next.Open(dir.path()).ok());
  ASSERT_EQ(next.attempts().size(), 1u);
  EXPECT_EQ(next.attempts().count(1), 1u);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(AttemptJournalTest, AnOlderWorkersStateFilesAreTakenInAndRemoved) {
  testing::TempDir dir;
  const std::string legacy = dir.path() + "/attempt-9";
  std::filesystem::create_directories(legacy);
  {
    std::ofstream out(legacy + "/state.json");
    out << AttemptStateJson(State(9, protocol::Outcome::kFailed)).dump() << "\n";
  }
  {
    AttemptJournal j;
    ASSERT_TRUE(j.Open(dir.path()).ok());
    ASSERT_EQ(j.attempts().count(9), 1u);
    EXPECT_EQ(j.attempts().at(9).outcome, protocol::Outcome::kFailed);
  }
  EXPECT_FALSE(std::filesystem::exists(legacy + "/state.json"));
  AttemptJournal next;  // from the journal now
  ASSERT_TRUE(next.Open(dir.path()).ok());
  EXPECT_EQ(next.attempts().count(9), 1u);
}

TEST(AttemptJournalTest, AnUnwritableWorkDirIsAnError) {
  AttemptJournal j;
  EXPECT_FALSE(j.Open("/nonexistent/frugal-work").ok());
}

}  // namespace
}  // namespace frugal::worker
