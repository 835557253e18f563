#include "scheduler/store/pg/batch_rows.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store::pg {

namespace {

// The columns in the order of their parameters, with the array type each is read as.
struct Column {
  const char* name;
  const char* type;
};
constexpr Column kColumns[] = {
    {"id", "bigint"},
    {"name", "text"},
    {"project", "text"},
    {"command", "text"},
    {"env", "text"},
    {"working_dir", "text"},
    {"gpus", "int"},
    {"gpu_types", "text"},
    {"min_gpu_mem_gb", "int"},
    {"priority", "text"},
    {"priority_rank", "int"},
    {"deadline_us", "bigint"},
    {"estimate_s", "bigint"},
    {"max_runtime_s", "bigint"},
    {"tolerance", "text"},
    {"checkpoint_interval_s", "bigint"},
    {"depends_on", "text"},
    {"labels", "text"},
    {"max_attempts", "int"},
    {"idempotency_key", "text"},
    {"request_sha256", "text"},
    {"depends_on_any", "text"},
    {"approval_reason", "text"},
    {"array_id", "bigint"},
    {"array_index", "int"},
    {"nodes", "int"},
};
constexpr std::size_t kCount = std::size(kColumns);

enum Col : std::size_t {
  kId,
  kName,
  kProject,
  kCommand,
  kEnv,
  kWorkingDir,
  kGpus,
  kGpuTypes,
  kMinGpuMem,
  kPriority,
  kPriorityRank,
  kDeadline,
  kEstimate,
  kMaxRuntime,
  kTolerance,
  kCheckpointInterval,
  kDependsOn,
  kLabels,
  kMaxAttempts,
  kIdempotencyKey,
  kRequestSha,
  kDependsOnAny,
  kApprovalReason,
  kArrayId,
  kArrayIndex,
  kNodes,
};
static_assert(kNodes + 1 == kCount);

// An element of an array literal, quoted: inside double quotes only `"` and `\` need a
// backslash; braces, commas, spaces and newlines are taken as they are.
Status AppendQuoted(std::string& out, const std::string& s) {
  if (s.find('\0') != std::string::npos)
    return InvalidArgument("batch: a string holds a NUL character, which PostgreSQL text cannot");
  out += '"';
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  out += '"';
  return Status::Ok();
}

// A JSON string. Printable ASCII without quote or backslash, what names, commands and
// keys nearly always are, is written as is; anything else goes through nlohmann, so escapes
// and the check of UTF-8 are exactly the library's.
void AppendJsonString(std::string& out, const std::string& s) {
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

std::string JsonMap(const std::map<std::string, std::string>& m) {
  std::string out = "{";
  bool first = true;
  for (const auto& [k, v] : m) {
    if (!first) out += ',';
    first = false;
    AppendJsonString(out, k);
    out += ':';
    AppendJsonString(out, v);
  }
  out += '}';
  return out;
}

StatusOr<std::string> TextArray(const std::vector<std::string>& v) {
  std::string out = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    RETURN_IF_ERROR(AppendQuoted(out, v[i]));
  }
  out += '}';
  return out;
}

std::string IdArray(const std::vector<model::JobId>& v) {
  std::string out = "{";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(v[i]);
  }
  out += '}';
  return out;
}

}  // namespace

std::string BatchColumns::FromItem(int first_param) {
  std::string args, names;
  for (std::size_t i = 0; i < kCount; ++i) {
    if (i > 0) {
      args += ", ";
      names += ", ";
    }
    args +=
        '$' + std::to_string(first_param + static_cast<int>(i)) + "::" + kColumns[i].type + "[]";
    names += kColumns[i].name;
  }
  return "unnest(" + args + ") AS r(" + names + ")";
}

BatchColumns::BatchColumns() : cols_(kCount, "{") {}

Status BatchColumns::Add(const SubmitRequest& req, model::JobId id,
                         std::optional<std::int64_t> array_id, std::optional<int> array_index) {
  const model::JobSpec& s = req.spec;
  ASSIGN_OR_RETURN(int rank, model::PriorityRank(s.priority));
  std::vector<model::JobId> deps = s.after;
  for (auto d : s.after_any)
    if (std::find(deps.begin(), deps.end(), d) == deps.end()) deps.push_back(d);
  if (!empty_)
    for (auto& c : cols_) c += ',';
  empty_ = false;
  auto num = [&](Col c, std::int64_t v) { cols_[c] += std::to_string(v); };
  auto opt = [&](Col c, auto v) {
    if (v)
      num(c, static_cast<std::int64_t>(*v));
    else
      cols_[c] += "NULL";
  };
  auto secs = [&](Col c, const std::optional<Seconds>& v) {
    if (v)
      num(c, v->count());
    else
      cols_[c] += "NULL";
  };
  auto text = [&](Col c, const std::string& v) { return AppendQuoted(cols_[c], v); };
  auto opt_text = [&](Col c, const std::optional<std::string>& v) -> Status {
    if (v) return text(c, *v);
    cols_[c] += "NULL";
    return Status::Ok();
  };
  num(kId, id);
  RETURN_IF_ERROR(text(kName, s.name));
  RETURN_IF_ERROR(text(kProject, s.project));
  ASSIGN_OR_RETURN(auto command, TextArray(s.command));
  RETURN_IF_ERROR(text(kCommand, command));
  RETURN_IF_ERROR(text(kEnv, JsonMap(s.env)));
  RETURN_IF_ERROR(text(kWorkingDir, s.working_dir));
  num(kGpus, s.gpus);
  ASSIGN_OR_RETURN(auto gpu_types, TextArray(s.gpu_types));
  RETURN_IF_ERROR(text(kGpuTypes, gpu_types));
  opt(kMinGpuMem, s.min_gpu_mem_gb);
  RETURN_IF_ERROR(text(kPriority, s.priority));
  num(kPriorityRank, rank);
  if (s.deadline)
    cols_[kDeadline] += ToMicrosParam(*s.deadline);
  else
    cols_[kDeadline] += "NULL";
  secs(kEstimate, s.estimate);
  secs(kMaxRuntime, s.max_runtime);
  RETURN_IF_ERROR(text(kTolerance, model::ToString(s.tolerance)));
  secs(kCheckpointInterval, s.checkpoint_interval);
  RETURN_IF_ERROR(text(kDependsOn, IdArray(deps)));
  RETURN_IF_ERROR(text(kLabels, JsonMap(s.labels)));
  num(kMaxAttempts, s.max_attempts);
  RETURN_IF_ERROR(opt_text(kIdempotencyKey, req.idempotency_key));
  RETURN_IF_ERROR(opt_text(kRequestSha, req.idempotency_key
                                            ? std::optional<std::string>(req.request_sha256)
                                            : std::nullopt));
  RETURN_IF_ERROR(text(kDependsOnAny, IdArray(s.after_any)));
  RETURN_IF_ERROR(opt_text(kApprovalReason, req.approval_reason));
  opt(kArrayId, array_id);
  opt(kArrayIndex, array_index);
  num(kNodes, s.nodes);
  return Status::Ok();
}

std::vector<std::string> BatchColumns::Params() && {
  for (auto& c : cols_) c += '}';
  return std::move(cols_);
}

}  // namespace frugal::store::pg
