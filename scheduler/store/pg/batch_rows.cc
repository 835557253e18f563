#include "scheduler/store/pg/batch_rows.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store::pg {

namespace {

// A JSON string. Printable ASCII without quote or backslash, what names, commands and
// keys nearly always are, is written as is; anything else goes through nlohmann, so escapes
// and the check of UTF-8 are exactly the library's.
void AppendString(std::string& out, const std::string& s) {
  const bool plain = std::all_of(s.begin(), s.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
  });
  if (!plain) {
    out += nlohmann::json(s).dump();
    return;
  }
  out += '"';
  out += s;
  out += '"';
}

void AppendStrings(std::string& out, const std::vector<std::string>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(out, v[i]);
  }
  out += ']';
}

void AppendIds(std::string& out, const std::vector<model::JobId>& v) {
  out += '[';
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(v[i]);
  }
  out += ']';
}

void AppendMap(std::string& out, const std::map<std::string, std::string>& m) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ',';
    first = false;
    AppendString(out, k);
    out += ':';
    AppendString(out, v);
  }
  out += '}';
}

// ,"key": then the value's writer; keys are our own plain names.
void Key(std::string& out, const char* key) {
  out += ",\"";
  out += key;
  out += "\":";
}

void AppendInt(std::string& out, const char* key, std::int64_t v) {
  Key(out, key);
  out += std::to_string(v);
}

void AppendOptSeconds(std::string& out, const char* key, const std::optional<Seconds>& s) {
  if (s) AppendInt(out, key, s->count());
}

}  // namespace

Status AppendBatchRow(std::string& out, const SubmitRequest& req, model::JobId id,
                      std::optional<std::int64_t> array_id, std::optional<int> array_index) {
  const model::JobSpec& s = req.spec;
  ASSIGN_OR_RETURN(int rank, model::PriorityRank(s.priority));
  std::vector<model::JobId> deps = s.after;
  for (auto d : s.after_any)
    if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
  out += "{\"id\":";
  out += std::to_string(id);
  Key(out, "name");
  AppendString(out, s.name);
  Key(out, "project");
  AppendString(out, s.project);
  Key(out, "command");
  AppendStrings(out, s.command);
  Key(out, "env");
  AppendMap(out, s.env);
  Key(out, "working_dir");
  AppendString(out, s.working_dir);
  AppendInt(out, "gpus", s.gpus);
  AppendInt(out, "nodes", s.nodes);
  Key(out, "gpu_types");
  AppendStrings(out, s.gpu_types);
  if (s.min_gpu_mem_gb) AppendInt(out, "min_gpu_mem_gb", *s.min_gpu_mem_gb);
  Key(out, "priority");
  AppendString(out, s.priority);
  AppendInt(out, "priority_rank", rank);
  if (s.deadline) {
    Key(out, "deadline_us");
    AppendString(out, ToMicrosParam(*s.deadline));
  }
  AppendOptSeconds(out, "estimate_s", s.estimate);
  AppendOptSeconds(out, "max_runtime_s", s.max_runtime);
  Key(out, "tolerance");
  AppendString(out, model::ToString(s.tolerance));
  AppendOptSeconds(out, "checkpoint_interval_s", s.checkpoint_interval);
  Key(out, "depends_on");
  AppendIds(out, deps);
  Key(out, "labels");
  AppendMap(out, s.labels);
  AppendInt(out, "max_attempts", s.max_attempts);
  if (req.idempotency_key) {
    Key(out, "idempotency_key");
    AppendString(out, *req.idempotency_key);
    Key(out, "request_sha256");
    AppendString(out, req.request_sha256);
  }
  Key(out, "depends_on_any");
  AppendIds(out, s.after_any);
  if (req.approval_reason) {
    Key(out, "approval_reason");
    AppendString(out, *req.approval_reason);
  }
  if (array_id) AppendInt(out, "array_id", *array_id);
  if (array_index) AppendInt(out, "array_index", *array_index);
  out += '}';
  return Status::Ok();
}

}  // namespace frugal::store::pg
