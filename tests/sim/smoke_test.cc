// A seconds-long run of the simulator on real traces: the invariants every full run must
// keep. The single-job run uses the slice kept in tests/sim/traces (so it runs everywhere);
// the cluster run needs ../shared/traces beside the repo and is skipped without it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <map>

#include "bench/sim/experiments.h"
#include "bench/sim/single_runs.h"
#include "bench/sim/traces.h"

namespace frugal::sim {
namespace {

class SimSmokeTest : public ::testing::Test {
 protected:
  void Load(const std::string& dir) {
    auto set = LoadTraces(dir, 180);
    ASSERT_TRUE(set.ok()) << set.status().ToString();
    traces_ = std::move(*set);
  }
  const ZoneSeries* Find(const std::string& trace_set, const std::string& zone) const {
    for (const auto& s : traces_.series)
      if (s.trace_set == trace_set && s.zone == zone) return &s;
    return nullptr;
  }
  // A single-job spec on the zone of the slice kept in tests/sim/traces.
  void SliceSpec(const std::string& experiment, SingleJobSpec& spec) {
    ASSERT_NO_FATAL_FAILURE(Load(FRUGAL_TRACE_SLICE_DIR));
    const ZoneSeries* s = Find("aws-v100-1x-2023-02", "us-east-1f");
    ASSERT_NE(s, nullptr);
    spec.experiment = experiment;
    spec.cases.push_back({s->Name(), MakeMarket({s}, 1, 180), {}});
  }
  TraceSet traces_;
};

TEST_F(SimSmokeTest, FrugalMeetsFeasibleDeadlinesAndNoPolicyBeatsTheOptimum) {
  SingleJobSpec spec;
  ASSERT_NO_FATAL_FAILURE(SliceSpec("smoke", spec));
  spec.fractions = {0.6, 0.95};
  spec.d_hours = {0.05, 0.2};
  spec.starts = 4;
  spec.reference_bins = 2;
  std::vector<RunRecord> runs = RunSingleJobs(spec, 2);
  ASSERT_EQ(runs.size(), 4u * 2 * 2 * 8);  // starts x fractions x d x policies

  std::map<std::tuple<int, double, double>, double> optimum;
  for (const RunRecord& r : runs)
    if (r.policy == kOptimumName) optimum[{r.start, r.fraction, r.d_hours}] = r.cost;
  for (const RunRecord& r : runs) {
    SCOPED_TRACE(r.policy + " start " + std::to_string(r.start));
    EXPECT_GE(r.cost, optimum.at({r.start, r.fraction, r.d_hours}) - 1e-9);
    // Frugal keeps every feasible deadline; so does Uniform Progress whose Safety Net keeps
    // a checkpoint interval for a reclaim's rework.
    if (r.policy == "frugal" || r.policy == "uniform-progress-safe" || r.policy == kReferenceName) {
      EXPECT_FALSE(r.missed);
    }
    if (r.policy == kOnDemandName) {
      EXPECT_NEAR(r.norm, 1.0, 1e-9);
      EXPECT_EQ(r.spot_hours, 0);
    }
    if (r.policy != kOptimumName) {
      // Billed hours: the work, the first changeover and every reclaim's rework at least.
      EXPECT_GE(r.spot_hours + r.od_hours, spec.work_hours + r.d_hours + r.lost_hours - 1e-6);
      EXPECT_GE(r.launches, r.reclaims + 1);
    }
  }
}

// Learned from the past: every policy's jobs come in the second half of the series; the
// held-out reference learns from the first half, the in-sample one from the whole.
TEST_F(SimSmokeTest, EveryPolicyRunsOnTheSecondHalfBesideBothReferences) {
  SingleJobSpec spec;
  ASSERT_NO_FATAL_FAILURE(SliceSpec("smoke_heldout", spec));
  spec.fractions = {0.95};
  spec.d_hours = {0.05};
  spec.starts = 3;
  spec.reference_bins = 1;
  spec.second_half = true;
  std::vector<RunRecord> runs = RunSingleJobs(spec, 2);
  ASSERT_FALSE(runs.empty());
  int reference_runs = 0, held_out_runs = 0;
  for (const RunRecord& r : runs) {
    EXPECT_GE(r.start, spec.cases[0].market.steps / 2);
    if (r.policy == kReferenceName) ++reference_runs;
    if (r.policy == kReferenceHeldOutName) ++held_out_runs;
    if (r.policy == kReferenceName || r.policy == kReferenceHeldOutName || r.policy == "frugal") {
      EXPECT_FALSE(r.missed) << r.policy;
    }
  }
  EXPECT_EQ(reference_runs, 3);
  EXPECT_EQ(held_out_runs, 3);
}

TEST_F(SimSmokeTest, FrugalMeetsEveryDeadlineOfADayOfTheClusterTrace) {
  if (!std::filesystem::exists(std::string(FRUGAL_TRACES_DIR) + "/spot_catalog.csv"))
    GTEST_SKIP() << "no traces at " << FRUGAL_TRACES_DIR;
  ASSERT_NO_FATAL_FAILURE(Load(FRUGAL_TRACES_DIR));
  SimOptions o;
  o.traces_dir = FRUGAL_TRACES_DIR;
  o.out_dir =
      (std::filesystem::temp_directory_path() / ("frugal_sim_smoke." + std::to_string(::getpid())))
          .string();
  std::filesystem::create_directories(o.out_dir);
  o.smoke = true;
  Section s = RunExperiment4(traces_, o);
  ASSERT_FALSE(s.bars.empty()) << s.markdown;
  int miss_bars = 0;
  for (const Bar& b : s.bars) {
    if (b.name.find("zero deadline misses for Frugal") == std::string::npos) continue;
    ++miss_bars;
    EXPECT_TRUE(b.pass) << b.name << ": " << b.measured;
  }
  EXPECT_EQ(miss_bars, 2);  // both pool mixes
  std::filesystem::remove_all(o.out_dir);
}

// A traces directory may hold only some kinds of series (--traces on other data): an
// experiment with nothing to run says so in the report instead of vanishing from it.
TEST_F(SimSmokeTest, AnExperimentWithNoSeriesOfItsKindSaysWhyInTheReport) {
  ASSERT_NO_FATAL_FAILURE(Load(FRUGAL_TRACE_SLICE_DIR));  // one zone, one instance
  SimOptions o;
  o.traces_dir = FRUGAL_TRACE_SLICE_DIR;
  o.smoke = true;
  Section multi = RunExperiment2(traces_, o);
  EXPECT_TRUE(multi.bars.empty());
  EXPECT_NE(multi.markdown.find("Skipped: no (file, instance type) with at least three GPU zones"),
            std::string::npos)
      << multi.markdown;
  Section gang = RunExperiment3(traces_, o);
  EXPECT_TRUE(gang.bars.empty());
  EXPECT_NE(gang.markdown.find("Skipped: no GPU series probed out of more than one instance"),
            std::string::npos)
      << gang.markdown;
  Section cluster = RunExperiment4(traces_, o);
  EXPECT_TRUE(cluster.bars.empty());
  EXPECT_NE(cluster.markdown.find("Skipped: not_found: cannot open"), std::string::npos)
      << cluster.markdown;
}

}  // namespace
}  // namespace frugal::sim
