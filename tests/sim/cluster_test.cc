// The cluster engine of experiment 4 and its schedulers on tiny hand-made workloads.
// Minutes are the engine's step; on-demand $3/GPU-h is $0.05 per GPU-minute.
#include "bench/sim/cluster_sim.h"

#include <gtest/gtest.h>

#include <map>

#include "bench/sim/cluster_policies.h"
#include "bench/sim/single_runs.h"

namespace frugal::sim {
namespace {

// One spot zone whose availability per minute is `up` ('1' up), at $1/GPU-h.
Market OneZone(const std::string& up) {
  Market m;
  m.step_seconds = 60;
  m.steps = static_cast<int>(up.size());
  Zone z;
  z.name = "z";
  for (char c : up) z.up.push_back(c == '1'), z.price.push_back(1.0);
  z.reclaims.assign(m.steps + 1, 0);
  z.node_hours.assign(m.steps + 1, 0);
  m.zones.push_back(z);
  return m;
}

ClusterJob MakeJob(int id, int arrival, int work, int deadline, model::Tolerance t, int rank = 2) {
  ClusterJob j;
  j.id = id;
  j.qos = "x";
  j.arrival = arrival;
  j.work = work;
  j.deadline = deadline;
  j.tolerance = t;
  j.rank = rank;
  if (t == model::Tolerance::kCheckpointed) j.checkpoint = 10;
  return j;
}

ClusterSetup MakeSetup(std::vector<ClusterJob> jobs, const std::string& up, int reserved) {
  ClusterSetup s;
  s.jobs = std::move(jobs);
  s.spot = OneZone(up);
  s.od_price = 3.0;
  s.reserved_price = 1.8;
  s.reserved_gpus = reserved;
  s.window = 120;
  return s;
}

TEST(ClusterTest, AllOnDemandPaysStartupAndRunPerGpuMinute) {
  // One 1-GPU job of 60 minutes: launched at 0, live at 3, runs 3-62, done at 63.
  // Billed 63 minutes x $0.05 = $3.15. No reserved capacity is bought.
  Cluster c(MakeSetup({MakeJob(0, 0, 60, 200, model::Tolerance::kNone)}, std::string(300, '1'), 8), false);
  AllOnDemandCluster od;
  ClusterResult r = c.Run(od);
  EXPECT_NEAR(r.cost, 3.15, 1e-9);
  EXPECT_EQ(r.reserved_cost, 0);
  EXPECT_EQ(c.jobs()[0].finish, 63);
  EXPECT_EQ(r.class_hits[0], 1);
}

TEST(ClusterTest, SlurmLikeFillsReservedFirstThenBursts) {
  // 8 reserved GPUs; an 8-GPU job takes them at 0; a 1-GPU job at 0 bursts to on-demand
  // (3 + 30 minutes = $1.65). Reserved: 8 GPUs x 120 min x $0.03 = $28.8 for the window.
  std::vector<ClusterJob> jobs = {MakeJob(0, 0, 60, 200, model::Tolerance::kNone),
                                  MakeJob(1, 0, 30, 200, model::Tolerance::kNone)};
  jobs[0].gpus = 8;
  Cluster c2(MakeSetup(jobs, std::string(300, '1'), 8), true);
  SlurmLikeCluster slurm;
  ClusterResult r = c2.Run(slurm);
  EXPECT_NEAR(r.od_cost, 1.65, 1e-9);
  EXPECT_NEAR(r.reserved_cost, 28.8, 1e-9);
  EXPECT_EQ(c2.jobs()[0].first_start, 0);
  EXPECT_NEAR(r.reserved_used_gpu_hours, 8.0, 1e-9);  // 60 minutes x 8 GPUs
}

TEST(ClusterTest, AReclaimResumesACheckpointedJobFromItsCheckpoint) {
  // Spot up for minutes 0-24, then down. A checkpointed job (checkpoint every 10 minutes
  // of running) on spot: live at 3, runs 3-24 (22 minutes, saved at 20). Reclaimed at 25:
  // 2 minutes lost. Greedy spot then falls back to on-demand: live at 28, restore 3, the
  // remaining 40 minutes 31-70: done at 71.
  std::string up = std::string(25, '1') + std::string(275, '0');
  Cluster c(MakeSetup({MakeJob(0, 0, 60, 300, model::Tolerance::kCheckpointed)}, up, 0), true);
  SkyPilotLikeCluster sky;
  ClusterResult r = c.Run(sky);
  EXPECT_EQ(r.reclaims, 1);
  EXPECT_NEAR(r.lost_gpu_hours, 2.0 / 60, 1e-9);
  EXPECT_EQ(c.jobs()[0].finish, 71);
}

TEST(ClusterTest, FrugalMeetsEveryDeadlineAndUsesReservedBeforePaying) {
  // 8 reserved GPUs, spot flickering; a mix of tolerances and tight and loose deadlines.
  std::string up;
  for (int i = 0; i < 600; ++i) up += (i / 37) % 3 ? '1' : '0';
  std::vector<ClusterJob> jobs;
  for (int i = 0; i < 12; ++i) {
    auto t = i % 3 == 0 ? model::Tolerance::kNone
                        : i % 3 == 1 ? model::Tolerance::kRestartable : model::Tolerance::kCheckpointed;
    int work = 20 + 7 * i;
    jobs.push_back(MakeJob(i, 5 * i, work, 5 * i + 15 + work * (1 + i % 4), t, i % 4));
    jobs.back().gpus = 1 + i % 3;
  }
  ClusterSetup s = MakeSetup(jobs, up, 8);
  policy::PolicyConfig config;
  config.restore_time = Seconds(180);
  config.spread_large_jobs = false;
  FrugalCluster frugal(policy::MakePolicy("placement/cost", config).value());
  Cluster c(s, true);
  ClusterResult r = c.Run(frugal);
  EXPECT_EQ(r.unfinished, 0);
  for (const auto& j : c.jobs()) EXPECT_LE(j.finish, j.deadline) << "job " << j.id;
  Cluster c_od(s, false);
  AllOnDemandCluster od;
  EXPECT_LT(r.od_cost + r.spot_cost, c_od.Run(od).cost);
}

// Looks at the snapshot FrugalCluster builds each cycle, then lets it decide.
class Watching final : public ClusterPolicy {
 public:
  explicit Watching(FrugalCluster& frugal) : frugal_(frugal) {}
  std::string Name() const override { return "watching"; }
  void Cycle(Cluster& c) override {
    for (const auto& p : frugal_.SnapshotOf(c).pools)
      if (p.kind == model::CapacityKind::kSpot) seen[c.now()] = p;
    frugal_.Cycle(c);
  }
  std::map<int, model::Pool> seen;  // the spot pool, by minute

 private:
  FrugalCluster& frugal_;
};

TEST(ClusterTest, FrugalsSpotPoolCarriesTheModelLearnedFromTheZonesPastDays) {
  // A zone up 50 minutes, down 10, for three days of minutes; jobs arrive all along.
  std::string up;
  for (int i = 0; i < 3 * 1440; ++i) up += i % 60 < 50 ? '1' : '0';
  std::vector<ClusterJob> jobs;
  for (int i = 0; i < 40; ++i)
    jobs.push_back(MakeJob(i, 90 * i, 30, 90 * i + 200, model::Tolerance::kCheckpointed));
  ClusterSetup s = MakeSetup(jobs, up, 0);
  s.window = 3 * 1440;
  policy::PolicyConfig config;
  config.restore_time = Seconds(180);
  config.spread_large_jobs = false;
  config.solve_spot_tables_inline = true;
  FrugalCluster frugal(policy::MakePolicy("placement/cost", config).value());
  Watching watch(frugal);
  Cluster c(s, false);
  ClusterResult r = c.Run(watch);
  EXPECT_EQ(r.unfinished, 0);
  ASSERT_FALSE(watch.seen.empty());
  int before = 0, first_day = 0, second_day = 0;
  for (const auto& [minute, pool] : watch.seen) {
    // What the zone shows now: up or down, and since when (whole minutes of its spell).
    const bool zone_up = minute % 60 < 50;
    EXPECT_EQ(pool.availability_now.up, zone_up) << "minute " << minute;
    EXPECT_EQ(pool.availability_now.spell_seconds, 60 * (zone_up ? minute % 60 : minute % 60 - 50))
        << "minute " << minute;
    // The model: none before the first daily refit, then fitted on every day before now.
    if (minute < 1440) {
      EXPECT_EQ(pool.availability, nullptr) << "minute " << minute;
      ++before;
      continue;
    }
    ASSERT_NE(pool.availability, nullptr) << "minute " << minute;
    EXPECT_DOUBLE_EQ(pool.availability->ObservedTicks(), 1440.0 * (minute / 1440))
        << "minute " << minute;
    (minute < 2880 ? first_day : second_day)++;
  }
  EXPECT_GT(before, 0);
  EXPECT_GT(first_day, 0);
  EXPECT_GT(second_day, 0);
}

}  // namespace
}  // namespace frugal::sim
