#include "scheduler/policy/guardrails/guardrails.h"

#include <algorithm>
#include <cmath>
#include <map>

namespace frugal::policy {

namespace {

// gpus x rate x milliseconds overflows 64 bits within months: GCC's 128-bit integers.
__extension__ typedef __int128 Int128;

Micros CostMicros(int gpus, Micros rate_per_gpu_hour, std::int64_t ms) {
  return static_cast<Micros>(static_cast<Int128>(gpus) * rate_per_gpu_hour * ms / 3'600'000);
}

// "11.2 GB" from MiB, rounded to a tenth (integer arithmetic: no float in the message).
std::string FormatGb(int mb) {
  const long long tenths = (static_cast<long long>(mb) * 10 + 512) / 1024;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " GB";
}

bool Contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

StatusOr<model::JobSpec> ApplyClassRuntime(model::JobSpec spec,
                                           const model::GuardrailSettings& settings) {
  const auto it = settings.runtimes.find(spec.priority);
  if (it == settings.runtimes.end()) return spec;
  const model::ClassRuntime& rule = it->second;
  if (!spec.max_runtime && rule.default_max_runtime) spec.max_runtime = rule.default_max_runtime;
  if (spec.max_runtime && rule.max_max_runtime && *spec.max_runtime > *rule.max_max_runtime) {
    return FailedPrecondition("max_runtime " + FormatDuration(*spec.max_runtime) +
                                  " is above the maximum of priority class '" + spec.priority +
                                  "' (" + FormatDuration(*rule.max_max_runtime) +
                                  "); ask for at most that, or ask an admin",
                              "max_runtime_seconds");
  }
  return spec;
}

std::optional<std::string> ApprovalReason(const model::JobSpec& spec,
                                          const model::GuardrailSettings& settings) {
  if (settings.premium_gpu_types.empty() || spec.gpus <= settings.approval_above_gpus) {
    return std::nullopt;
  }
  std::vector<std::string> premium;
  for (const auto& t : settings.premium_gpu_types) {
    if (spec.gpu_types.empty() || Contains(spec.gpu_types, t)) premium.push_back(t);
  }
  if (premium.empty()) return std::nullopt;
  std::string types;
  for (const auto& t : premium) types += (types.empty() ? "" : ", ") + t;
  return "awaiting admin approval: asks for " + std::to_string(spec.gpus) +
         " GPUs that may be premium (" + types + "), more than the " +
         std::to_string(settings.approval_above_gpus) +
         " allowed without approval; an admin runs `frugal admin approve JOB`";
}

std::vector<model::IdleAction> DecideIdle(const model::IdleBatch& batch) {
  std::vector<model::IdleAction> out;
  for (const auto& a : batch.attempts) {
    const auto idle_for = std::chrono::duration_cast<Seconds>(batch.now - a.idle_since);
    if (idle_for < batch.window) continue;
    model::IdleAction act;
    act.attempt_id = a.attempt_id;
    act.job_id = a.job_id;
    act.warn = !a.warned;
    const std::string idle = "GPUs under " + std::to_string(batch.threshold_percent) +
                             "% utilisation for " + FormatDuration(idle_for) + " on " + a.node;
    if (a.policy == model::IdlePolicy::kWarn) {
      if (!act.warn) continue;  // warned once already; nothing more to do
      act.message = idle + "; the team's idle policy is warn, so it keeps running";
    } else if (a.idle_requeues >= kMaxIdleRequeues) {
      // Idle again after a requeue: the job is likely stuck (waiting on input, deadlocked),
      // and every further requeue would pay a restart and another idle window.
      act.stop = model::IdleStep::kStop;
      act.message = idle + " again after " + std::to_string(a.idle_requeues) +
                    " idle requeue(s); stopped by the team's idle policy";
    } else if (a.has_checkpoint) {
      act.stop = model::IdleStep::kRequeue;
      act.message = idle + "; requeued by the team's idle policy, resuming from the latest "
                           "checkpoint";
    } else {
      act.stop = model::IdleStep::kStop;
      act.message = idle + "; stopped by the team's idle policy (it never checkpointed, so "
                           "there is nothing to resume from)";
    }
    out.push_back(std::move(act));
  }
  std::sort(out.begin(), out.end(),
            [](const model::IdleAction& x, const model::IdleAction& y) { return x.attempt_id < y.attempt_id; });
  return out;
}

model::IdleBatch IdleBatchOf(const model::Snapshot& s) {
  model::IdleBatch b;
  b.now = s.now;
  b.threshold_percent = s.idle_threshold_percent;
  b.window = s.idle_window;
  for (const auto& r : s.running) {
    if (!r.idle_since || r.stopping) continue;
    model::IdleAttempt a;
    a.attempt_id = r.attempt_id;
    a.job_id = r.job_id;
    a.node = r.node_name;
    a.idle_since = *r.idle_since;
    a.warned = r.idle_warned;
    // The snapshot's latest checkpoint of the job: the one a requeue resumes from.
    a.has_checkpoint = r.last_checkpoint_at.has_value();
    a.policy = r.idle_policy;
    a.idle_requeues = r.idle_requeues;
    b.attempts.push_back(std::move(a));
  }
  return b;
}

std::optional<RightSizing> AdviseRightSizing(const model::JobUsage& usage,
                                             const std::vector<model::Pool>& pools) {
  std::map<std::string, const model::Pool*> by_name;
  for (const auto& p : pools) by_name[p.name] = &p;
  std::optional<int> peak;
  int gpus = 0;
  Micros actual = 0;
  double work_ms = 0;  // run time at speed 1: time, not money
  std::vector<std::string> used_types;
  for (const auto& r : usage.runs) {
    const auto it = by_name.find(r.pool);
    if (it == by_name.end() || r.run_ms <= 0) continue;
    const model::Pool& p = *it->second;
    if (r.peak_gpu_mem_mb) peak = std::max(peak.value_or(0), *r.peak_gpu_mem_mb);
    gpus = std::max(gpus, r.gpus);
    actual += CostMicros(r.gpus, p.price_per_gpu_hour, r.run_ms);
    work_ms += static_cast<double>(r.run_ms) * p.speed;
    if (!Contains(used_types, p.gpu_type)) used_types.push_back(p.gpu_type);
  }
  if (!peak || gpus == 0 || actual == 0) return std::nullopt;
  std::optional<RightSizing> best;
  for (const auto& p : pools) {
    if (Contains(used_types, p.gpu_type)) continue;
    if (static_cast<long long>(p.gpu_mem_gb) * 1024 < *peak) continue;
    if (p.kind == model::CapacityKind::kSpot && usage.tolerance == model::Tolerance::kNone) continue;
    if (p.max_gpus > 0 && p.max_gpus < gpus) continue;
    const auto ms = static_cast<std::int64_t>(std::llround(work_ms / p.speed));
    const Micros alt = CostMicros(gpus, p.price_per_gpu_hour, ms);
    if (alt >= actual) continue;
    if (best && (alt > best->alternative || (alt == best->alternative && p.name >= best->pool))) {
      continue;
    }
    best = RightSizing{p.name, p.gpu_type, p.gpu_mem_gb, *peak, actual, alt, actual - alt, ""};
  }
  if (best) {
    best->message = "peak " + FormatGb(best->peak_gpu_mem_mb) + " fits " + best->gpu_type + " (" +
                    std::to_string(best->gpu_mem_gb) + " GB, pool " + best->pool +
                    "): the same run would have cost $" + FormatDollars(best->alternative) +
                    " instead of $" + FormatDollars(best->actual);
  }
  return best;
}

}  // namespace frugal::policy
