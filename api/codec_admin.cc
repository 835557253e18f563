#include "api/codec_admin.h"

#include <algorithm>

#include "common/log.h"
#include "scheduler/model/availability_history.h"
#include "scheduler/store/pool_json.h"

namespace frugal::api {

namespace {

// `field` of `obj` as seconds: null clears it, a missing field leaves `out` alone.
Status MergeSeconds(const json& obj, const char* field, const std::string& path,
                    std::optional<Seconds>& out, std::int64_t least = 1) {
  if (!obj.contains(field)) return Status::Ok();
  if (obj[field].is_null()) {
    out.reset();
    return Status::Ok();
  }
  if (!obj[field].is_number_integer() || obj[field].get<std::int64_t>() < least ||
      obj[field].get<std::int64_t>() > 366LL * 86400) {
    return InvalidArgument(path + "." + field + ": seconds between " + std::to_string(least) +
                               " and 31622400, or null",
                           path + "." + field);
  }
  out = Seconds(obj[field].get<std::int64_t>());
  return Status::Ok();
}

Status MergeClasses(const json& classes, model::GuardrailSettings& s) {
  if (!classes.is_object()) {
    return InvalidArgument("priority_classes: an object by class name, e.g. {\"normal\":"
                           "{\"default_max_runtime_seconds\":3600}}",
                           "priority_classes");
  }
  for (auto it = classes.begin(); it != classes.end(); ++it) {
    const std::string path = "priority_classes." + it.key().substr(0, 32);
    RETURN_IF_ERROR(model::PriorityRank(it.key()).status());
    if (it.value().is_null()) {
      s.runtimes.erase(it.key());
      continue;
    }
    if (!it.value().is_object()) return InvalidArgument(path + ": must be an object or null", path);
    RETURN_IF_ERROR(
        CheckFields(it.value(), {"default_max_runtime_seconds", "max_max_runtime_seconds",
                                 "min_run_time_seconds"}));
    model::ClassRuntime rt = s.runtimes[it.key()];
    RETURN_IF_ERROR(MergeSeconds(it.value(), "default_max_runtime_seconds", path, rt.default_max_runtime));
    RETURN_IF_ERROR(MergeSeconds(it.value(), "max_max_runtime_seconds", path, rt.max_max_runtime));
    // 0: jobs of this class may be preempted by a higher class at once.
    RETURN_IF_ERROR(MergeSeconds(it.value(), "min_run_time_seconds", path, rt.min_run_time, 0));
    if (rt.default_max_runtime && rt.max_max_runtime && *rt.default_max_runtime > *rt.max_max_runtime) {
      return InvalidArgument(path + ": the default must not exceed the maximum", path);
    }
    s.runtimes[it.key()] = rt;
  }
  return Status::Ok();
}

// Each bin's hazard: the chance a spell of that age ends in the next tick, from the fitted
// counts plus the prior (the prior alone before the first fit).
json EncodeBins(const store::PoolAvailability& a) {
  const auto m = a.model ? *a.model
                         : model::AvailabilityModel::Empty(model::kAvailabilityTickSeconds,
                                                           model::kAvailabilityBins);
  const auto next = m.Transitions(a.prior.prior_ticks, a.prior.up_end, a.prior.down_end);
  auto hazard = [&](int state) {
    const int other_side_age0 = m.IsUp(state) ? m.bins() : 0;
    for (const auto& n : next[state])
      if (n.state == other_side_age0) return n.p;
    return 0.0;
  };
  auto ticks = [&](int s) { return m.stay[s] + m.onward[s] + m.flip[s]; };
  json bins = json::array();
  for (int b = 0; b < m.bins(); ++b) {
    const int up = m.State(true, m.bin_start[b]), down = m.State(false, m.bin_start[b]);
    bins.push_back({{"bin", b},
                    {"from_seconds", m.bin_start[b] * m.tick_seconds},
                    {"up_hazard", hazard(up)},
                    {"down_hazard", hazard(down)},
                    {"up_ticks", ticks(up)},
                    {"down_ticks", ticks(down)}});
  }
  return bins;
}

}  // namespace

json EncodePool(const model::Pool& p) {
  json out = store::PoolSettingsJson(p);
  out["id"] = p.id;
  out["name"] = p.name;
  // What the store learned from the pool's node history.
  out["preemption_rate_per_node_hour"] = p.preemption_rate_per_node_hour;
  out["mean_outage_hours"] = p.mean_outage_hours;
  // What it has now, beside what it may grow to (max_gpus) and what is paid (committed_gpus).
  out["live_gpus"] = p.live_gpus;
  out["largest_node_gpus"] = p.largest_node_gpus;
  return out;
}

StatusOr<model::Pool> DecodePool(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"name", "capacity_kind", "gpu_type", "gpu_mem_gb", "speed",
                                     "price_per_gpu_hour", "max_gpus", "startup_delay_seconds",
                                     "idle_timeout_seconds", "preemption_prior_per_node_hour",
                                     "committed_gpus"}));
  model::Pool p;
  ASSIGN_OR_RETURN(p.name, RequiredString(body, "name"));
  RETURN_IF_ERROR(ValidateName(p.name, "name", false));
  ASSIGN_OR_RETURN(std::string kind, RequiredString(body, "capacity_kind"));
  ASSIGN_OR_RETURN(p.kind, model::ParseCapacityKind(kind));
  ASSIGN_OR_RETURN(p.gpu_type, RequiredString(body, "gpu_type"));
  if (p.gpu_type.empty() || p.gpu_type.size() > 64) {
    return InvalidArgument("gpu_type: 1 to 64 characters", "gpu_type");
  }
  ASSIGN_OR_RETURN(p.gpu_mem_gb, RequiredInt(body, "gpu_mem_gb", 1, 4096));
  ASSIGN_OR_RETURN(p.max_gpus, RequiredInt(body, "max_gpus", 0, 1000000));
  // Money travels as a decimal string ("2.48"), never a float.
  ASSIGN_OR_RETURN(std::string price, RequiredString(body, "price_per_gpu_hour"));
  auto micros = ParseDollars(price);
  if (!micros.ok()) {
    return InvalidArgument("price_per_gpu_hour: " + micros.status().message(), "price_per_gpu_hour");
  }
  p.price_per_gpu_hour = *micros;
  if (body.contains("speed")) {
    if (!body["speed"].is_number() || body["speed"].get<double>() <= 0 ||
        body["speed"].get<double>() > 100) {
      return InvalidArgument("speed: must be a number in (0, 100]", "speed");
    }
    p.speed = body["speed"].get<double>();
  }
  if (body.contains("startup_delay_seconds")) {
    ASSIGN_OR_RETURN(auto s, RequiredInt(body, "startup_delay_seconds", 0, 86400));
    p.startup_delay = Seconds(s);
  }
  if (body.contains("idle_timeout_seconds")) {
    ASSIGN_OR_RETURN(auto s, RequiredInt(body, "idle_timeout_seconds", 0, 30 * 86400));
    p.idle_timeout = Seconds(s);
  }
  if (body.contains("preemption_prior_per_node_hour")) {
    const json& v = body["preemption_prior_per_node_hour"];
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1000) {
      return InvalidArgument("preemption_prior_per_node_hour: must be a number in [0, 1000]",
                             "preemption_prior_per_node_hour");
    }
    if (p.kind != model::CapacityKind::kSpot && v.get<double>() > 0) {
      return InvalidArgument("preemption_prior_per_node_hour: only spot pools are preempted",
                             "preemption_prior_per_node_hour");
    }
    p.preemption_prior_per_node_hour = v.get<double>();
  }
  if (body.contains("committed_gpus")) {
    ASSIGN_OR_RETURN(p.committed_gpus, RequiredInt(body, "committed_gpus", 0, 1000000));
    if (p.committed_gpus > 0 && p.kind != model::CapacityKind::kReserved) {
      return InvalidArgument("committed_gpus: only reserved pools are paid for unused; an " +
                                 std::string(model::ToString(p.kind)) +
                                 " pool is paid for the GPUs its jobs use",
                             "committed_gpus");
    }
  }
  return p;
}

json EncodeQuota(const std::string& team, const store::QuotaSpec& q) {
  json out = {{"team", team}, {"pools", json::object()}};
  for (auto kind : {model::CapacityKind::kReserved, model::CapacityKind::kOnDemand,
                    model::CapacityKind::kSpot}) {
    auto it = q.by_kind.find(kind);
    out[std::string(model::ToString(kind)) + "_gpus"] =
        it == q.by_kind.end() ? json(nullptr) : json(it->second);
  }
  for (const auto& [pool, max] : q.by_pool) out["pools"][pool] = max;
  return out;
}

// {"reserved_gpus","on_demand_gpus","spot_gpus": N or null (no limit), "pools": {name: N}}
StatusOr<store::QuotaSpec> DecodeQuota(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"reserved_gpus", "on_demand_gpus", "spot_gpus", "pools"}));
  store::QuotaSpec q;
  for (auto kind : {model::CapacityKind::kReserved, model::CapacityKind::kOnDemand,
                    model::CapacityKind::kSpot}) {
    const std::string field = std::string(model::ToString(kind)) + "_gpus";
    if (!body.contains(field) || body[field].is_null()) continue;
    ASSIGN_OR_RETURN(auto n, RequiredInt(body, field.c_str(), 0, 1000000));
    q.by_kind[kind] = static_cast<int>(n);
  }
  if (body.contains("pools")) {
    const json& pools = body["pools"];
    if (!pools.is_object()) return InvalidArgument("pools: must be an object {pool: GPUs}", "pools");
    if (pools.size() > 256) return InvalidArgument("pools: at most 256 entries", "pools");
    for (const auto& [name, v] : pools.items()) {
      if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1000000)
        return InvalidArgument("pools." + name.substr(0, 64) + ": must be an integer 0..1000000",
                               "pools");
      RETURN_IF_ERROR(ValidateName(name, "pools", false));
      q.by_pool[name] = v.get<int>();
    }
  }
  return q;
}

json EncodeNode(const store::NodeInfo& n) {
  return {{"id", n.id},
          {"name", n.name},
          {"pool", n.pool},
          {"gpus", n.gpus},
          {"gpu_type", n.gpu_type},
          {"gpu_mem_gb", n.gpu_mem_gb},
          {"state", n.state},
          {"drain", n.drain.empty() ? json(nullptr) : json(n.drain)},
          {"drained_by", n.drained_by ? json(*n.drained_by) : json(nullptr)},
          {"drained_at", OptTime(n.drained_at)},
          {"notice_at", OptTime(n.notice_at)},
          {"lease_epoch", n.lease_epoch},
          {"registered_at", FormatRfc3339(n.registered_at)},
          {"last_heartbeat_at", OptTime(n.last_heartbeat_at)},
          {"lease_expires_at", FormatRfc3339(n.lease_expires_at)},
          // The lease's age: seconds since a heartbeat last renewed it (since registration
          // when none has).
          {"lease_age_seconds",
           AgeSeconds(n.last_heartbeat_at ? n.last_heartbeat_at : n.registered_at, n.as_of)},
          {"running_attempts", n.running_attempts},
          {"gpu_utilization", n.gpu_utilization ? json(*n.gpu_utilization) : json(nullptr)},
          {"credential_issued_at", OptTime(n.credential_issued_at)},
          {"credential_age_seconds", AgeSeconds(n.credential_issued_at, n.as_of)}};
}

json EncodeInstance(const store::Instance& x) {
  return {{"id", x.id},
          {"pool", x.pool},
          {"node", x.node},
          {"instance_id", x.instance_id.empty() ? json(nullptr) : json(x.instance_id)},
          {"state", store::ToString(x.state)},
          {"leaked", x.leaked},
          {"gpus", x.gpus},
          {"price_per_gpu_hour", FormatDollars(x.rate_micros_per_gpu_hour)},
          {"requested_at", FormatRfc3339(x.requested_at)},
          {"created_at", OptTime(x.created_at)},
          {"registered_at", OptTime(x.registered_at)},
          {"ended_at", OptTime(x.ended_at)},
          {"reason", x.reason},
          {"detail", x.detail},
          {"cost", FormatDollars(x.cost_micros, true)},
          {"cost_micros", x.cost_micros}};
}

json EncodeToken(const store::TokenInfo& t) {
  // Never the secret or its hash: only who it is for and whether it still works.
  return {{"id", t.id},
          {"role", store::ToString(t.role)},
          {"team", t.team},
          {"user", t.user},
          {"created_at", FormatRfc3339(t.created_at)},
          {"revoked_at", t.revoked_at ? json(FormatRfc3339(*t.revoked_at)) : json(nullptr)}};
}

json EncodeAudit(const store::AuditEntry& e) {
  return {{"id", e.id},
          {"at", FormatRfc3339(e.at)},
          {"token_id", e.token_id ? json(*e.token_id) : json(nullptr)},
          {"user", e.user},
          {"team", e.team},
          {"action", e.action},
          {"subject", e.subject},
          {"before", json::parse(e.before)},
          {"after", json::parse(e.after)}};
}

json EncodeSettings(const model::GuardrailSettings& s) {
  json classes = json::object();
  for (const auto& [cls, rt] : s.runtimes) {
    classes[cls] = {{"default_max_runtime_seconds", OptSeconds(rt.default_max_runtime)},
                    {"max_max_runtime_seconds", OptSeconds(rt.max_max_runtime)},
                    {"min_run_time_seconds", OptSeconds(rt.min_run_time)}};
  }
  return {{"priority_classes", classes},
          {"approval", {{"premium_gpu_types", s.premium_gpu_types},
                        {"above_gpus", s.approval_above_gpus}}},
          {"idle", {{"threshold_percent", s.idle_threshold_percent},
                    {"window_seconds", s.idle_window.count()}}}};
}

// A partial update: what the body names replaces the current value; the rest stays.
Status MergeSettings(const json& body, model::GuardrailSettings& s) {
  RETURN_IF_ERROR(CheckFields(body, {"priority_classes", "approval", "idle"}));
  if (body.contains("priority_classes")) RETURN_IF_ERROR(MergeClasses(body["priority_classes"], s));
  if (body.contains("approval")) {
    const json& a = body["approval"];
    if (!a.is_object()) return InvalidArgument("approval: must be an object", "approval");
    RETURN_IF_ERROR(CheckFields(a, {"premium_gpu_types", "above_gpus"}));
    if (a.contains("premium_gpu_types")) {
      const json& t = a["premium_gpu_types"];
      if (!t.is_array() || t.size() > 64) {
        return InvalidArgument("approval.premium_gpu_types: an array of GPU type names",
                               "approval.premium_gpu_types");
      }
      s.premium_gpu_types.clear();
      for (const auto& v : t) {
        if (!v.is_string() || v.get<std::string>().empty() || v.get<std::string>().size() > 64) {
          return InvalidArgument("approval.premium_gpu_types: names of 1 to 64 characters",
                                 "approval.premium_gpu_types");
        }
        RETURN_IF_ERROR(ValidateName(v.get<std::string>(), "approval.premium_gpu_types", true));
        s.premium_gpu_types.push_back(v.get<std::string>());
      }
    }
    if (a.contains("above_gpus")) {
      ASSIGN_OR_RETURN(auto n, RequiredInt(a, "above_gpus", 0, 100000));
      s.approval_above_gpus = static_cast<int>(n);
    }
  }
  if (body.contains("idle")) {
    const json& i = body["idle"];
    if (!i.is_object()) return InvalidArgument("idle: must be an object", "idle");
    RETURN_IF_ERROR(CheckFields(i, {"threshold_percent", "window_seconds"}));
    if (i.contains("threshold_percent")) {
      ASSIGN_OR_RETURN(auto p, RequiredInt(i, "threshold_percent", 1, 100));
      s.idle_threshold_percent = static_cast<int>(p);
    }
    if (i.contains("window_seconds")) {
      ASSIGN_OR_RETURN(auto w, RequiredInt(i, "window_seconds", 1, 7 * 86400));
      s.idle_window = Seconds(w);
    }
  }
  return Status::Ok();
}

json EncodeBudgetSpec(const std::string& team, const store::BudgetSpec& b, bool with_webhook) {
  json out = {{"team", team},
              {"period", model::ToString(b.period)},
              {"limit", Money(b.limit)},
              {"alert_at_pct", b.alert_at_pct},
              {"hard", b.hard}};
  if (with_webhook) out["webhook_url"] = b.webhook_url.empty() ? json(nullptr) : json(b.webhook_url);
  return out;
}

// {"period": "monthly"|"weekly", "limit": "20000.00", "alert_at_pct": [50, 80],
//  "hard": bool, "webhook_url": "http://..." or null}
StatusOr<store::BudgetSpec> DecodeBudget(const json& body) {
  RETURN_IF_ERROR(CheckFields(body, {"period", "limit", "alert_at_pct", "hard", "webhook_url"}));
  store::BudgetSpec b;
  if (body.contains("period")) {
    ASSIGN_OR_RETURN(std::string period, RequiredString(body, "period"));
    ASSIGN_OR_RETURN(b.period, model::ParseBudgetPeriod(period));
  }
  if (!body.contains("limit") || !body["limit"].is_string())
    return InvalidArgument("limit: required, a dollar amount as a string, e.g. \"20000.00\"",
                           "limit");
  auto limit = ParseDollars(body["limit"].get<std::string>(), /*allow_negative=*/true);
  if (!limit.ok()) return InvalidArgument("limit: " + limit.status().message(), "limit");
  if (*limit <= 0) return InvalidArgument("limit: must be more than 0 dollars", "limit");
  b.limit = *limit;
  if (body.contains("alert_at_pct")) {
    const json& a = body["alert_at_pct"];
    if (!a.is_array() || a.size() > 10)
      return InvalidArgument("alert_at_pct: an array of at most 10 whole percents", "alert_at_pct");
    for (const auto& v : a) {
      if (!v.is_number_integer() || v.get<long long>() < 1 || v.get<long long>() > 100)
        return InvalidArgument("alert_at_pct: each threshold must be a whole percent from 1 to "
                               "100, not " + v.dump().substr(0, 32),
                               "alert_at_pct");
      b.alert_at_pct.push_back(v.get<int>());
    }
    std::sort(b.alert_at_pct.begin(), b.alert_at_pct.end());
    b.alert_at_pct.erase(std::unique(b.alert_at_pct.begin(), b.alert_at_pct.end()),
                         b.alert_at_pct.end());
  }
  if (body.contains("hard")) {
    if (!body["hard"].is_boolean()) return InvalidArgument("hard: must be true or false", "hard");
    b.hard = body["hard"].get<bool>();
  }
  if (body.contains("webhook_url") && !body["webhook_url"].is_null()) {
    ASSIGN_OR_RETURN(b.webhook_url, RequiredString(body, "webhook_url"));
  }
  return b;
}

json EncodeAvailability(const store::PoolAvailability& a) {
  return {{"pool", a.pool},
          {"tick_seconds", model::kAvailabilityTickSeconds},
          {"up", a.now.up},
          {"spell_seconds", a.now.spell_seconds},
          {"assumed", a.now.assumed},
          {"observed_ticks", a.observed_ticks},
          {"imported_ticks", a.imported_ticks},
          {"imported_source", a.imported_source.empty() ? json(nullptr) : json(a.imported_source)},
          {"imported_at", OptTime(a.imported_at)},
          {"fitted_at", OptTime(a.fitted_at)},
          {"refit_ms", a.fitted_at ? json(a.refit_ms) : json(nullptr)},
          {"bins", EncodeBins(a)}};
}

}  // namespace frugal::api
