// The market one simulated job sees: for each spot zone, per step of the grid, whether the
// job's gang can be had for the whole step and the spot price; and the on-demand price
// (always available). Built from ZoneSeries; shared read-only by every run on it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "bench/sim/traces.h"

namespace frugal::sim {

struct Zone {
  std::string name;
  std::vector<uint8_t> up;    // per step: `instances` spot instances obtainable all step
  std::vector<double> price;  // per step: spot USD per instance-hour
  // Prefix sums over steps [0, s): reclaims (up -> down transitions, one per node) and
  // node-hours up. The simulated store learns the pool's reclaim rate from them, as the
  // real store learns from its node history: only the past of the series is used.
  std::vector<double> reclaims, node_hours;
  // Prefix sums over steps [0, s): outages begun (up -> down) and hours down. The store
  // learns a pool's mean outage from the same two figures.
  std::vector<double> outages, down_hours;
  // Seconds of warning before this pool reclaims a node (AWS 120, GCP 30); 0: none.
  int notice_seconds = 0;
};

struct Market {
  int step_seconds = 180;
  double od_price = 0;        // on-demand USD per instance-hour (cheapest zone's)
  int instances = 1;          // the job's gang: instances it needs at once
  int gpus_per_instance = 1;  // GPUs in one instance
  std::string gpu = "gpu";
  std::vector<Zone> zones;
  int steps = 0;  // common length of every zone

  bool Up(int zone, int step) const {
    return step >= 0 && step < steps && zones[zone].up[step] != 0;
  }
  // USD per instance-hour of `where` (kOnDemand or a zone) during `step`.
  double Price(int where, int step) const;
  double StepHours() const { return step_seconds / 3600.0; }
  // The step of minute `minute` of a longer run: the series repeats. 0 with no steps.
  int StepAtMinute(long long minute) const {
    return steps <= 0 ? 0 : static_cast<int>((minute * 60 / step_seconds) % steps);
  }
};

// Where a job is: idle, on on-demand, or on spot in zone z >= 0.
inline constexpr int kIdle = -2;
inline constexpr int kOnDemand = -1;

// Fills a zone's prefix sums (reclaims, node-hours, outages, hours down) from its `up`.
void FillHistory(Zone& zone, int instances, double step_hours);

// A market over `series` (one zone each, cut to the shortest) for a gang of `instances`:
// a zone is up in a step when its count is at least `instances`. On-demand costs the
// cheapest zone's on-demand price. `step_seconds` 0: the series' own (native) step; the
// series must then share it.
Market MakeMarket(const std::vector<const ZoneSeries*>& series, int instances, int step_seconds);

// One single-job run: submitted at market step `start`, `work` steps of work (C0), due
// `deadline` steps after submission (R0), `changeover` steps (d) paid on every launch with
// no progress, a checkpoint every `checkpoint` steps of running.
//
// What a reclaim costs (issue 14's three settings, see LossSetting): a job whose final
// checkpoint write fits inside its pool's notice (final_checkpoint_seconds >= 0 and <=
// Zone::notice_seconds) loses only the write's time of work; otherwise it loses the work
// since its latest periodic checkpoint. Loss-free is a checkpoint every step.
struct JobShape {
  int start = 0;
  int work = 0;
  int deadline = 0;
  int changeover = 1;
  int checkpoint = 5;
  int final_checkpoint_seconds = -1;  // -1: the job cannot checkpoint on notice
};

// Issue 14's settings of experiment 1. kLossFree: the paper's model (nothing lost);
// kNoticeAware: 120 s notice on every spot pool, a 60 s final checkpoint, periodic
// checkpoints as kNoNotice; kNoNotice: no notice, the work since the latest 15-minute
// checkpoint is lost.
enum class LossSetting { kLossFree, kNoticeAware, kNoNotice };
inline constexpr int kNoticeSeconds = 120;
inline constexpr int kFinalCheckpointSeconds = 60;
const char* LossSettingName(LossSetting setting);  // "loss-free", "notice-aware", "no notice"
// Sets every zone's notice for `setting` (kNoticeAware: kNoticeSeconds, else 0).
void ApplyNotice(Market& m, LossSetting setting);
// Sets a job's checkpoints for `setting`: every step (kLossFree), a final write of
// kFinalCheckpointSeconds on notice (kNoticeAware), or the periodic ones only (kNoNotice).
void ApplyLossSetting(JobShape& job, LossSetting setting);

// Seconds of work a reclaim in `zone` takes back from a job with `unsaved_seconds` of work
// since its latest checkpoint: the final write when it fits in the notice, else all of it.
int ReclaimLossSeconds(const Market& m, int zone, const JobShape& job, int unsaved_seconds);

// The normaliser: what on-demand only costs (one launch, then the work), USD.
double OnDemandCost(const Market& m, const JobShape& job);

}  // namespace frugal::sim
