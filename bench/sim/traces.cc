#include "bench/sim/traces.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <filesystem>
#include <map>

#include "bench/sim/csv.h"
#include "common/clock.h"

namespace frugal::sim {

namespace {

std::string Lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The zone keys a catalogue row may have in its file: the zone itself, or for files that
// mix instance types "zone/<gpu>x<gpus per instance>" (us-west-2a/v100x8).
bool ZoneMatches(const std::string& key, const ZoneSeries& z) {
  if (key == z.zone) return true;
  std::string gpu = Lower(z.gpu.substr(0, z.gpu.find(' ')));
  return key == z.zone + "/" + gpu + "x" + std::to_string(z.gpus_per_instance);
}

// Samples per zone key of one file, in either schema of the README: the common tick schema
// (elapsed_s, available, spot_usd_hr) or the H100 probe rounds (timestamp_utc, created).
StatusOr<std::map<std::string, std::vector<Sample>>> ReadSamples(const std::string& path) {
  ASSIGN_OR_RETURN(CsvTable t, ReadCsv(path));
  int zone = t.Col("zone"), elapsed = t.Col("elapsed_s"), avail = t.Col("available");
  int price = t.Col("spot_usd_hr"), ts = t.Col("timestamp_utc"), created = t.Col("created");
  if (zone < 0 || (avail < 0 && created < 0)) return InvalidArgument(path + ": unknown schema");
  std::map<std::string, std::vector<Sample>> out;
  bool by_timestamp = elapsed < 0;
  double t0 = 1e300;
  std::vector<double> times(t.rows.size());
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    if (by_timestamp) {
      auto when = ParseRfc3339(r[ts]);
      if (!when.ok()) return InvalidArgument(path + ": bad timestamp '" + r[ts] + "'");
      times[i] = std::chrono::duration<double>(when->time_since_epoch()).count();
      t0 = std::min(t0, times[i]);
    } else {
      times[i] = LeadingNumber(r[elapsed], -1);
    }
  }
  for (size_t i = 0; i < t.rows.size(); ++i) {
    const auto& r = t.rows[i];
    Sample s;
    s.t = by_timestamp ? times[i] - t0 : times[i];
    if (s.t < 0) continue;
    s.value = static_cast<int>(LeadingNumber(r[avail >= 0 ? avail : created], 0));
    s.price = price >= 0 ? LeadingNumber(r[price], -1) : -1;
    out[r[zone]].push_back(s);
  }
  for (auto& [key, v] : out)
    std::stable_sort(v.begin(), v.end(),
                     [](const Sample& a, const Sample& b) { return a.t < b.t; });
  return out;
}

}  // namespace

void Resample(const std::vector<Sample>& samples, int step_seconds, double flat_price,
              ZoneSeries& out) {
  out.count.clear();
  out.price.clear();
  if (samples.empty() || step_seconds <= 0) return;
  const double step = step_seconds;
  int steps = static_cast<int>(std::floor(samples.back().t / step)) + 1;
  out.count.assign(steps, INT_MAX);
  out.price.assign(steps, flat_price);
  for (size_t k = 0; k < samples.size(); ++k) {
    double from = samples[k].t;
    double to = k + 1 < samples.size() ? samples[k + 1].t : from + step;
    if (to <= from) continue;  // duplicate time: the later sample wins the next interval
    int first = static_cast<int>(std::floor(from / step));
    int last = std::min(steps - 1, static_cast<int>(std::ceil(to / step)) - 1);
    for (int j = first; j <= last; ++j) out.count[j] = std::min(out.count[j], samples[k].value);
  }
  // Price in effect at each step's start: the last sample at or before it.
  size_t k = 0;
  double current = samples.front().price >= 0 ? samples.front().price : flat_price;
  for (int j = 0; j < steps; ++j) {
    while (k < samples.size() && samples[k].t <= j * step) {
      if (samples[k].price >= 0) current = samples[k].price;
      ++k;
    }
    out.price[j] = current;
  }
  for (auto& c : out.count)
    if (c == INT_MAX) c = 0;
}

void NativeTicks(const std::vector<Sample>& samples, double flat_price, ZoneSeries& out) {
  out.count.clear();
  out.price.clear();
  std::vector<double> gaps;
  double current = flat_price;
  for (size_t k = 0; k < samples.size(); ++k) {
    if (k > 0) gaps.push_back(samples[k].t - samples[k - 1].t);
    if (samples[k].price >= 0) current = samples[k].price;
    out.count.push_back(samples[k].value);
    out.price.push_back(current);
  }
  if (gaps.empty()) {
    out.step_seconds = 1;
    return;
  }
  std::nth_element(gaps.begin(), gaps.begin() + gaps.size() / 2, gaps.end());
  out.step_seconds = std::max(1, static_cast<int>(std::lround(gaps[gaps.size() / 2])));
}

ZoneSeries Subdivide(const ZoneSeries& series, int k) {
  ZoneSeries out = series;
  if (k <= 1 || series.step_seconds % k != 0) return out;
  out.step_seconds = series.step_seconds / k;
  out.count.clear();
  out.price.clear();
  for (size_t j = 0; j < series.count.size(); ++j) {
    out.count.insert(out.count.end(), k, series.count[j]);
    out.price.insert(out.price.end(), k, series.price[j]);
  }
  return out;
}

StatusOr<TraceSet> LoadTraces(const std::string& dir, int step_seconds) {
  namespace fs = std::filesystem;
  ASSIGN_OR_RETURN(CsvTable cat, ReadCsv((fs::path(dir) / "spot_catalog.csv").string()));
  const char* needed[] = {"file",
                          "trace_set",
                          "zone",
                          "instance_type",
                          "gpu",
                          "gpus_per_instance",
                          "instances_probed",
                          "on_demand_usd_hr"};
  for (const char* c : needed)
    if (cat.Col(c) < 0) return InvalidArgument("spot_catalog.csv has no column " + std::string(c));
  TraceSet set;
  set.dir = dir;
  set.step_seconds = step_seconds;
  std::map<std::string, std::map<std::string, std::vector<Sample>>> files;
  for (const auto& r : cat.rows) {
    ZoneSeries z;
    z.file = r[cat.Col("file")];
    z.trace_set = r[cat.Col("trace_set")];
    z.kind = cat.Col("kind") >= 0 ? r[cat.Col("kind")] : "";
    z.zone = r[cat.Col("zone")];
    z.instance_type = r[cat.Col("instance_type")];
    z.gpu = r[cat.Col("gpu")];
    z.gpus_per_instance = static_cast<int>(LeadingNumber(r[cat.Col("gpus_per_instance")], 0));
    z.instances_probed =
        std::max(1, static_cast<int>(LeadingNumber(r[cat.Col("instances_probed")], 1)));
    z.od_price = LeadingNumber(r[cat.Col("on_demand_usd_hr")], 0);
    int mean_col = cat.Col("mean_spot_usd_hr");
    double catalogue_spot = mean_col >= 0 ? LeadingNumber(r[mean_col], -1) : -1;
    double flat = catalogue_spot > 0 ? catalogue_spot : kDefaultSpotRatio * z.od_price;
    fs::path path = fs::path(dir) / z.file;
    if (!fs::exists(path) || z.od_price <= 0) continue;
    auto it = files.find(z.file);
    if (it == files.end()) {
      ASSIGN_OR_RETURN(auto samples, ReadSamples(path.string()));
      it = files.emplace(z.file, std::move(samples)).first;
    }
    const std::vector<Sample>* samples = nullptr;
    for (const auto& [key, v] : it->second)
      if (ZoneMatches(key, z)) samples = &v;
    if (!samples) continue;
    z.spot_price_per_tick =
        std::any_of(samples->begin(), samples->end(), [](const Sample& s) { return s.price >= 0; });
    if (step_seconds > 0) {
      Resample(*samples, step_seconds, flat, z);
      z.step_seconds = step_seconds;
    } else {
      NativeTicks(*samples, flat, z);
    }
    set.series.push_back(std::move(z));
  }
  return set;
}

}  // namespace frugal::sim
