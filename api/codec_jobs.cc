#include "api/codec_jobs.h"

#include <algorithm>
#include <regex>
#include <set>

namespace frugal::api {

namespace {

// The first `n` bytes of a key for a message, cut before a UTF-8 sequence rather than inside
// it: a message with half a character cannot be serialised into the error reply.
std::string KeyPrefix(const std::string& key, size_t n = 64) {
  if (key.size() <= n) return key;
  while (n > 0 && (static_cast<unsigned char>(key[n]) & 0xC0) == 0x80) --n;
  return key.substr(0, n);
}

const char* TypeName(const json& v) { return v.type_name(); }

StatusOr<std::string> GetString(const json& v, const std::string& field, size_t max_len,
                                bool allow_empty = true) {
  if (!v.is_string()) return FieldError(field, std::string("must be a string, got ") + TypeName(v));
  auto s = v.get<std::string>();
  if (s.size() > max_len) return FieldError(field, "longer than " + std::to_string(max_len) + " characters");
  if (!allow_empty && s.empty()) return FieldError(field, "must not be empty");
  if (s.find('\0') != std::string::npos) return FieldError(field, "must not contain NUL characters");
  return s;
}

StatusOr<long long> GetInt(const json& v, const std::string& field, long long lo, long long hi) {
  if (!v.is_number_integer()) {
    return FieldError(field, std::string("must be an integer, got ") + TypeName(v));
  }
  long long n = v.is_number_unsigned() && v.get<unsigned long long>() > 1ULL << 62
                    ? hi + 1
                    : v.get<long long>();
  if (n < lo || n > hi) {
    return FieldError(field, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                          ", got " + v.dump());
  }
  return n;
}

StatusOr<std::vector<std::string>> GetStringArray(const json& v, const std::string& field,
                                                  size_t max_items, size_t max_len) {
  if (!v.is_array()) return FieldError(field, std::string("must be an array, got ") + TypeName(v));
  if (v.size() > max_items) return FieldError(field, "more than " + std::to_string(max_items) + " items");
  std::vector<std::string> out;
  for (size_t i = 0; i < v.size(); ++i) {
    ASSIGN_OR_RETURN(auto s, GetString(v[i], field + "[" + std::to_string(i) + "]", max_len));
    out.push_back(std::move(s));
  }
  return out;
}

StatusOr<std::map<std::string, std::string>> GetStringMap(const json& v, const std::string& field,
                                                          size_t max_items, const std::regex& key_re,
                                                          const char* key_rule, size_t max_value) {
  if (!v.is_object()) return FieldError(field, std::string("must be an object, got ") + TypeName(v));
  if (v.size() > max_items) return FieldError(field, "more than " + std::to_string(max_items) + " entries");
  std::map<std::string, std::string> out;
  for (auto it = v.begin(); it != v.end(); ++it) {
    const std::string sub = field + "." + KeyPrefix(it.key());
    if (!std::regex_match(it.key(), key_re)) return FieldError(sub, std::string("key must match ") + key_rule);
    ASSIGN_OR_RETURN(out[it.key()], GetString(it.value(), sub, max_value));
  }
  return out;
}

StatusOr<Seconds> GetSeconds(const json& v, const std::string& field) {
  ASSIGN_OR_RETURN(long long n, GetInt(v, field, 1, 365LL * 86400));
  return Seconds(n);
}

const std::set<std::string>& KnownSubmitFields() {
  static const std::set<std::string> kFields = {
      "name", "command", "env", "working_dir", "gpus", "gpu_types", "min_gpu_mem_gb",
      "priority", "deadline", "estimate_seconds", "max_runtime_seconds", "tolerance",
      "checkpoint_interval_seconds", "after", "after_any", "labels", "project", "max_attempts",
      "nodes"};
  return kFields;
}

}  // namespace

StatusOr<model::JobSpec> DecodeJobSpec(const json& body) {
  for (auto it = body.begin(); it != body.end(); ++it) {
    if (!KnownSubmitFields().count(it.key())) {
      return InvalidArgument("unknown field '" + KeyPrefix(it.key()) + "'", KeyPrefix(it.key()));
    }
  }
  model::JobSpec s;
  auto has = [&](const char* k) { return body.contains(k) && !body[k].is_null(); };
  if (!has("command")) return FieldError("command", "is required: the program and its arguments as an array");
  ASSIGN_OR_RETURN(s.command, GetStringArray(body["command"], "command", 256, 8192));
  if (s.command.empty() || s.command[0].empty()) return FieldError("command", "must name a program");
  if (has("name")) {
    ASSIGN_OR_RETURN(s.name, GetString(body["name"], "name", 128));
  }
  if (has("project")) {
    ASSIGN_OR_RETURN(s.project, GetString(body["project"], "project", 128));
  }
  if (has("working_dir")) {
    ASSIGN_OR_RETURN(s.working_dir, GetString(body["working_dir"], "working_dir", 4096));
  }
  if (has("env")) {
    static const std::regex kEnvKey("[A-Za-z_][A-Za-z0-9_]{0,127}");
    ASSIGN_OR_RETURN(s.env, GetStringMap(body["env"], "env", 256, kEnvKey,
                                         "[A-Za-z_][A-Za-z0-9_]*", 8192));
  }
  if (has("labels")) {
    static const std::regex kLabelKey("[a-z0-9]([a-z0-9._/-]{0,61}[a-z0-9])?");
    ASSIGN_OR_RETURN(s.labels, GetStringMap(body["labels"], "labels", 64, kLabelKey,
                                            "[a-z0-9][a-z0-9._/-]* (at most 63)", 256));
  }
  if (has("gpus")) {
    ASSIGN_OR_RETURN(long long g, GetInt(body["gpus"], "gpus", 1, 1024));
    s.gpus = static_cast<int>(g);
  }
  if (has("nodes")) {
    // A multi-node gang (decision 0032): `gpus` is the total, split evenly over the nodes.
    ASSIGN_OR_RETURN(long long n, GetInt(body["nodes"], "nodes", 1, 64));
    s.nodes = static_cast<int>(n);
    if (s.gpus % s.nodes != 0) {
      return FieldError("nodes", "gpus (" + std::to_string(s.gpus) + ", the gang's total) must be a " +
                              "multiple of nodes (" + std::to_string(s.nodes) +
                              "); give gpus = nodes x GPUs per node");
    }
  }
  if (has("gpu_types")) {
    ASSIGN_OR_RETURN(s.gpu_types, GetStringArray(body["gpu_types"], "gpu_types", 16, 64));
    for (size_t i = 0; i < s.gpu_types.size(); ++i) {
      if (s.gpu_types[i].empty()) return FieldError("gpu_types[" + std::to_string(i) + "]", "must not be empty");
    }
  }
  if (has("min_gpu_mem_gb")) {
    if (!s.gpu_types.empty()) {
      return FieldError("min_gpu_mem_gb", "give either gpu_types or min_gpu_mem_gb, not both");
    }
    ASSIGN_OR_RETURN(long long m, GetInt(body["min_gpu_mem_gb"], "min_gpu_mem_gb", 1, 4096));
    s.min_gpu_mem_gb = static_cast<int>(m);
  }
  if (has("priority")) {
    ASSIGN_OR_RETURN(s.priority, GetString(body["priority"], "priority", 32));
    auto rank = model::PriorityRank(s.priority);
    if (!rank.ok()) return FieldError("priority", rank.status().message());
  }
  if (has("tolerance")) {
    ASSIGN_OR_RETURN(auto t, GetString(body["tolerance"], "tolerance", 32));
    auto tol = model::ParseTolerance(t);
    if (!tol.ok()) return FieldError("tolerance", tol.status().message());
    s.tolerance = *tol;
  }
  if (has("estimate_seconds")) {
    ASSIGN_OR_RETURN(s.estimate, GetSeconds(body["estimate_seconds"], "estimate_seconds"));
  }
  if (has("max_runtime_seconds")) {
    ASSIGN_OR_RETURN(s.max_runtime, GetSeconds(body["max_runtime_seconds"], "max_runtime_seconds"));
  }
  if (has("checkpoint_interval_seconds")) {
    ASSIGN_OR_RETURN(s.checkpoint_interval,
                     GetSeconds(body["checkpoint_interval_seconds"], "checkpoint_interval_seconds"));
  }
  if (s.estimate && s.max_runtime && *s.max_runtime < *s.estimate) {
    return FieldError("max_runtime_seconds", "is shorter than estimate_seconds");
  }
  if (has("max_attempts")) {
    ASSIGN_OR_RETURN(long long m, GetInt(body["max_attempts"], "max_attempts", 1, 100));
    s.max_attempts = static_cast<int>(m);
  }
  // after: run when these succeeded; after_any: when they ended, whatever the outcome.
  for (auto [field, out] : {std::pair{"after", &s.after}, std::pair{"after_any", &s.after_any}}) {
    if (!has(field)) continue;
    const json& a = body[field];
    if (!a.is_array())
      return FieldError(field, std::string("must be an array of job ids, got ") + a.type_name());
    if (a.size() > 256) return FieldError(field, "more than 256 dependencies");
    for (size_t i = 0; i < a.size(); ++i) {
      ASSIGN_OR_RETURN(long long id,
                       GetInt(a[i], std::string(field) + "[" + std::to_string(i) + "]", 1,
                              1LL << 62));
      if (std::find(out->begin(), out->end(), id) == out->end()) out->push_back(id);
    }
  }
  for (auto id : s.after_any) {
    if (std::find(s.after.begin(), s.after.end(), id) != s.after.end())
      return FieldError("after_any", "job " + std::to_string(id) + " is also in after; list it once");
  }
  if (has("deadline")) {
    ASSIGN_OR_RETURN(auto text, GetString(body["deadline"], "deadline", 64));
    auto t = ParseRfc3339(text);
    if (!t.ok()) return FieldError("deadline", t.status().message());
    s.deadline = *t;  // whether it can be met is admission's (service::CheckDeadline)
  }
  return s;
}

json EncodeJob(const model::Job& j) {
  auto opt_secs = [](const std::optional<Seconds>& s) -> json {
    return s ? json(s->count()) : json(nullptr);
  };
  auto opt_time = [](const std::optional<Timestamp>& t) -> json {
    return t ? json(FormatRfc3339(*t)) : json(nullptr);
  };
  const auto& s = j.spec;
  return json{
      {"id", j.id},
      {"name", s.name},
      {"team", j.team},
      {"user", j.user},
      {"project", s.project},
      {"state", model::ToString(j.state)},
      {"reason", j.reason},
      {"cancel_requested", j.cancel_requested},
      {"command", s.command},
      {"env", s.env},
      {"working_dir", s.working_dir},
      {"gpus", s.gpus},
      {"nodes", s.nodes},
      {"gpu_types", s.gpu_types},
      {"min_gpu_mem_gb", s.min_gpu_mem_gb ? json(*s.min_gpu_mem_gb) : json(nullptr)},
      {"priority", s.priority},
      {"deadline", opt_time(s.deadline)},
      {"estimate_seconds", opt_secs(s.estimate)},
      {"max_runtime_seconds", opt_secs(s.max_runtime)},
      {"tolerance", model::ToString(s.tolerance)},
      {"checkpoint_interval_seconds", opt_secs(s.checkpoint_interval)},
      {"after", s.after},
      {"after_any", s.after_any},
      {"labels", s.labels},
      {"max_attempts", s.max_attempts},
      {"attempts", j.attempts},
      {"created_at", FormatRfc3339(j.created_at)},
      {"updated_at", FormatRfc3339(j.updated_at)},
      {"started_at", opt_time(j.started_at)},
      {"finished_at", opt_time(j.finished_at)},
      {"array_id", j.array_id ? json(*j.array_id) : json(nullptr)},
      {"array_index", j.array_index ? json(*j.array_index) : json(nullptr)},
  };
}

json EncodeJobDetail(const store::JobDetail& d) {
  json out = EncodeJob(d.job);
  json attempts = json::array();
  for (const auto& a : d.attempts) {
    attempts.push_back({{"id", a.id},
                        {"number", a.number},
                        {"rank", a.rank},
                        {"node", a.node},
                        {"pool", a.pool},
                        {"gpus", a.gpus},
                        {"started_at", FormatRfc3339(a.started_at)},
                        {"ended_at", a.ended_at ? json(FormatRfc3339(*a.ended_at)) : json(nullptr)},
                        {"end_reason", a.end_reason.empty() ? json(nullptr) : json(a.end_reason)},
                        {"stop_kind", a.stop_kind.empty() ? json(nullptr) : json(a.stop_kind)},
                        {"exit_code", a.exit_code ? json(*a.exit_code) : json(nullptr)},
                        {"peak_gpu_mem_mb",
                         a.peak_gpu_mem_mb ? json(*a.peak_gpu_mem_mb) : json(nullptr)}});
  }
  out["attempt_history"] = attempts;
  if (d.latest_checkpoint) {
    const auto& c = *d.latest_checkpoint;
    out["latest_checkpoint"] = {{"step", c.step},       {"progress", c.progress},
                                {"uri", c.uri},         {"size_bytes", c.size_bytes},
                                {"attempt_id", c.attempt_id},
                                {"created_at", FormatRfc3339(c.created_at)}};
  } else {
    out["latest_checkpoint"] = nullptr;
  }
  json events = json::array();
  for (const auto& e : d.events) {
    events.push_back({{"at", FormatRfc3339(e.at)}, {"kind", e.kind}, {"from", e.from_state},
                      {"to", e.to_state}, {"message", e.message}});
  }
  out["events"] = events;
  return out;
}

// A job of the list with its timeline in short (null pool and zero money before its first
// attempt); the same names and figures as GET /v1/jobs/{id}/timeline's totals.
json EncodeJobListItem(const model::Job& job, const store::JobSummary* summary) {
  const store::JobSummary none;
  const auto& s = summary ? *summary : none;
  json out = EncodeJob(job);
  out["pool"] = summary ? json(s.pool) : json(nullptr);
  out["cost"] = FormatDollars(s.cost, true);
  out["cost_micros"] = s.cost;
  out["wasted"] = FormatDollars(s.lost, true);
  out["wasted_micros"] = s.lost;
  return out;
}

json EncodeArray(const store::ArraySummary& a) {
  return {{"id", a.id},
          {"name", a.name},
          {"team", a.team},
          {"user", a.user},
          {"first", a.first},
          {"last", a.last},
          {"step", a.step},
          {"task_count", a.task_count},
          {"max_running", a.max_running ? json(*a.max_running) : json(nullptr)},
          {"created_at", FormatRfc3339(a.created_at)},
          {"states", a.states},
          {"first_job", a.first_job},
          {"last_job", a.last_job},
          {"cost", FormatDollars(a.cost, true)},
          {"cost_micros", a.cost},
          {"wasted", FormatDollars(a.lost, true)},
          {"wasted_micros", a.lost}};
}

}  // namespace frugal::api
