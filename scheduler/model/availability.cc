#include "scheduler/model/availability.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

namespace frugal::model {

AvailabilityModel AvailabilityModel::Empty(std::int64_t tick_seconds, int bins) {
  AvailabilityModel m;
  m.tick_seconds = std::max<std::int64_t>(1, tick_seconds);
  bins = std::max(1, bins);
  // Geometric widths: hazards change fast early in a spell and slowly later.
  int start = 0;
  for (int b = 0; b < bins; ++b) {
    m.bin_start.push_back(start);
    start += std::max(1, static_cast<int>(std::lround(std::pow(1.6, b))));
  }
  m.stay.assign(2 * bins, 0);
  m.onward.assign(2 * bins, 0);
  m.flip.assign(2 * bins, 0);
  return m;
}

int AvailabilityModel::State(bool up, int age) const {
  int b = static_cast<int>(std::upper_bound(bin_start.begin(), bin_start.end(), age) -
                           bin_start.begin()) -
          1;
  b = std::clamp(b, 0, bins() - 1);
  return (up ? 0 : bins()) + b;
}

void AvailabilityModel::AddSpell(bool up, std::int64_t ticks, bool ended) {
  if (ticks <= 0) return;
  const int n = bins();
  const int side = up ? 0 : n;
  // Age a (0-based) is spent in bin(a); its tick ends the spell (last age of an ended
  // spell), moves on (the next age is in the next bin) or stays.
  for (int b = 0; b < n; ++b) {
    const std::int64_t lo = bin_start[b];
    const std::int64_t hi = b + 1 < n ? bin_start[b + 1] : INT64_MAX;
    if (ticks <= lo) break;
    const std::int64_t last = std::min(ticks, hi) - 1;  // last age spent in this bin
    double in_bin = static_cast<double>(last - lo + 1);
    if (ended && last == ticks - 1) {
      flip[side + b] += 1;
      in_bin -= 1;
    } else if (b + 1 < n && last == hi - 1 && ticks > hi) {
      onward[side + b] += 1;
      in_bin -= 1;
    }
    stay[side + b] += in_bin;
  }
}

void AvailabilityModel::AddSeries(const std::vector<std::uint8_t>& up) {
  size_t i = 0;
  while (i < up.size()) {
    size_t j = i;
    while (j < up.size() && (up[j] != 0) == (up[i] != 0)) ++j;
    AddSpell(up[i] != 0, static_cast<std::int64_t>(j - i), j < up.size());
    i = j;
  }
}

double AvailabilityModel::ObservedTicks() const {
  double t = 0;
  for (int s = 0; s < states(); ++s) t += stay[s] + onward[s] + flip[s];
  return t;
}

std::vector<std::vector<AvailabilityModel::Next>> AvailabilityModel::Transitions(
    double prior_ticks, double up_end, double down_end) const {
  const int n = bins();
  // Two levels of prior. Each side's hazard, pooled over its bins, starts from the admin's
  // (worth `prior_ticks`) and moves with all the side's evidence; each bin starts from its
  // side's pooled hazard (worth an equal share of `prior_ticks`) and moves with its own.
  // A bin that saw little (the oldest ages, often) so takes the hazard its side shows
  // rather than the admin's guess: with the admin's alone, a rarely reached age would look
  // as safe as the guess says, and the controller would wait for spells to reach it.
  double side_hazard[2];
  for (int side = 0; side < 2; ++side) {
    double ends = 0, ticks = 0;
    for (int b = 0; b < n; ++b) {
      const int st = side * n + b;
      ends += flip[st];
      ticks += stay[st] + onward[st] + flip[st];
    }
    const double admin = side == 0 ? up_end : down_end;
    side_hazard[side] = (ends + prior_ticks * admin) / std::max(1e-12, ticks + prior_ticks);
  }
  prior_ticks /= states();
  std::vector<std::vector<Next>> out(states());
  for (int s = 0; s < states(); ++s) {
    const bool up = IsUp(s);
    const int b = up ? s : s - n;
    const double h = std::clamp(side_hazard[up ? 0 : 1], 1e-6, 1.0);
    const int width = b + 1 < n ? bin_start[b + 1] - bin_start[b] : 0;
    double pf = prior_ticks * h;
    double pon = width > 0 ? prior_ticks * (1 - h) / width : 0;
    double pst = prior_ticks * (1 - h) - pon;
    double f = flip[s] + pf, o = (b + 1 < n ? onward[s] : 0) + pon,
           st = stay[s] + pst + (b + 1 < n ? 0 : onward[s]);
    double total = f + o + st;
    if (total <= 0) {  // no evidence and no prior: a spell that never ends
      out[s].push_back({s, 1.0});
      continue;
    }
    const int flip_to = up ? n : 0;  // the other side, age 0
    if (f > 0) out[s].push_back({flip_to, f / total});
    if (st > 0) out[s].push_back({s, st / total});
    if (o > 0) out[s].push_back({s + 1, o / total});
  }
  return out;
}

AvailabilityPrior PriorFor(std::int64_t tick_seconds, double reclaims_per_hour,
                           double outage_hours) {
  const double tick_h = static_cast<double>(std::max<std::int64_t>(1, tick_seconds)) / 3600.0;
  AvailabilityPrior p;
  p.prior_ticks = kAvailabilityPriorHours / tick_h;
  p.up_end = std::clamp(std::max(0.0, reclaims_per_hour) * tick_h, 1e-4, 1.0);
  p.down_end = std::clamp(tick_h / std::max(outage_hours, tick_h), 1e-4, 1.0);
  return p;
}

std::string AvailabilityToJson(const AvailabilityModel& m) {
  nlohmann::json j;
  j["tick_seconds"] = m.tick_seconds;
  j["bin_start"] = m.bin_start;
  j["stay"] = m.stay;
  j["onward"] = m.onward;
  j["flip"] = m.flip;
  return j.dump();
}

bool AvailabilityFromJson(const std::string& text, AvailabilityModel* out) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return false;
  try {
    AvailabilityModel m;
    m.tick_seconds = j.at("tick_seconds").get<std::int64_t>();
    m.bin_start = j.at("bin_start").get<std::vector<int>>();
    m.stay = j.at("stay").get<std::vector<double>>();
    m.onward = j.at("onward").get<std::vector<double>>();
    m.flip = j.at("flip").get<std::vector<double>>();
    const size_t n = m.bin_start.size();
    if (m.tick_seconds <= 0 || n == 0 || m.bin_start[0] != 0 || m.stay.size() != 2 * n ||
        m.onward.size() != 2 * n || m.flip.size() != 2 * n ||
        !std::is_sorted(m.bin_start.begin(), m.bin_start.end()))
      return false;
    *out = std::move(m);
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

}  // namespace frugal::model
