#include "bench/sim/market.h"

#include <algorithm>

namespace frugal::sim {

double Market::Price(int where, int step) const {
  if (where == kOnDemand) return od_price;
  const auto& p = zones[where].price;
  return p[std::clamp(step, 0, static_cast<int>(p.size()) - 1)];
}

void FillHistory(Zone& z, int instances, double step_hours) {
  const int steps = static_cast<int>(z.up.size());
  z.reclaims.assign(steps + 1, 0);
  z.node_hours.assign(steps + 1, 0);
  z.outages.assign(steps + 1, 0);
  z.down_hours.assign(steps + 1, 0);
  for (int j = 0; j < steps; ++j) {
    bool drop = j > 0 && z.up[j - 1] && !z.up[j];
    z.reclaims[j + 1] = z.reclaims[j] + (drop ? instances : 0);
    z.node_hours[j + 1] = z.node_hours[j] + (z.up[j] ? instances * step_hours : 0);
    z.outages[j + 1] = z.outages[j] + (drop ? 1 : 0);
    z.down_hours[j + 1] = z.down_hours[j] + (z.up[j] ? 0 : step_hours);
  }
}

Market MakeMarket(const std::vector<const ZoneSeries*>& series, int instances, int step_seconds) {
  Market m;
  m.step_seconds = step_seconds > 0 || series.empty() ? step_seconds : series.front()->step_seconds;
  m.instances = std::max(1, instances);
  if (series.empty()) return m;
  m.steps = series.front()->steps();
  m.od_price = series.front()->od_price;
  m.gpus_per_instance = std::max(1, series.front()->gpus_per_instance);
  m.gpu = series.front()->gpu;
  for (const auto* s : series) {
    m.steps = std::min(m.steps, s->steps());
    m.od_price = std::min(m.od_price, s->od_price);
  }
  for (const auto* s : series) {
    Zone z;
    z.name = s->zone;
    z.up.resize(m.steps);
    z.price.assign(s->price.begin(), s->price.begin() + m.steps);
    for (int j = 0; j < m.steps; ++j) z.up[j] = s->count[j] >= m.instances;
    FillHistory(z, m.instances, m.StepHours());
    m.zones.push_back(std::move(z));
  }
  return m;
}

const char* LossSettingName(LossSetting setting) {
  switch (setting) {
    case LossSetting::kLossFree:
      return "loss-free";
    case LossSetting::kNoticeAware:
      return "notice-aware";
    case LossSetting::kNoNotice:
      return "no notice";
  }
  return "?";
}

void ApplyNotice(Market& m, LossSetting setting) {
  for (auto& z : m.zones)
    z.notice_seconds = setting == LossSetting::kNoticeAware ? kNoticeSeconds : 0;
}

void ApplyLossSetting(JobShape& job, LossSetting setting) {
  if (setting == LossSetting::kLossFree) job.checkpoint = 1;
  job.final_checkpoint_seconds =
      setting == LossSetting::kNoticeAware ? kFinalCheckpointSeconds : -1;
}

int ReclaimLossSeconds(const Market& m, int zone, const JobShape& job, int unsaved_seconds) {
  const bool on_notice = job.final_checkpoint_seconds >= 0 && zone >= 0 &&
                         job.final_checkpoint_seconds <= m.zones[zone].notice_seconds;
  return on_notice ? std::min(unsaved_seconds, job.final_checkpoint_seconds) : unsaved_seconds;
}

double OnDemandCost(const Market& m, const JobShape& job) {
  return (job.work + job.changeover) * m.StepHours() * m.od_price * m.instances;
}

}  // namespace frugal::sim
