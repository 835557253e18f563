// BuildSubmitBody (cli/submit.h): the flags of `frugal submit` as the JSON of a job spec.
#include <utility>

#include "cli/flag_checks.h"
#include "cli/submit.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

Status AddKeyValues(json& body, const char* field, const std::vector<std::string>& items) {
  if (items.empty()) return Status::Ok();
  json object = json::object();
  for (const auto& item : items) {
    ASSIGN_OR_RETURN(auto kv, SplitKeyValue(item));
    object[kv.first] = kv.second;  // a repeated key: the later one wins, as in a shell
  }
  body[field] = std::move(object);
  return Status::Ok();
}

Status AddSeconds(json& body, const char* field, const std::string& text) {
  if (text.empty()) return Status::Ok();
  ASSIGN_OR_RETURN(Seconds d, ParseDuration(text));
  body[field] = d.count();
  return Status::Ok();
}

}  // namespace

StatusOr<json> BuildSubmitBody(const SubmitOptions& o, Timestamp now) {
  json body = {{"command", o.command}};
  if (o.gpus_per_node && !o.nodes)
    return InvalidArgument("--gpus-per-node needs --nodes N", "--gpus-per-node");
  if (o.nodes) {
    // The API takes the gang's total; --gpus-per-node is the way people think of it.
    const int per = o.gpus_per_node.value_or(o.gpus ? 0 : 1);
    if (o.gpus && o.gpus_per_node && *o.gpus != *o.nodes * per)
      return InvalidArgument("--gpus " + std::to_string(*o.gpus) + " is not --nodes x " +
                                 "--gpus-per-node (" + std::to_string(*o.nodes * per) +
                                 "); give one of them",
                             "--gpus");
    body["nodes"] = *o.nodes;
    body["gpus"] = o.gpus.value_or(*o.nodes * per);
  } else if (o.gpus) {
    body["gpus"] = *o.gpus;
  }
  if (!o.gpu_types.empty()) body["gpu_types"] = o.gpu_types;
  if (o.min_gpu_mem_gb) body["min_gpu_mem_gb"] = *o.min_gpu_mem_gb;
  if (!o.priority.empty()) body["priority"] = o.priority;
  if (!o.deadline.empty()) {
    auto deadline = ParseDeadline(o.deadline, now);
    if (!deadline.ok()) return InvalidArgument(deadline.status().message(), "--deadline");
    body["deadline"] = FormatRfc3339(*deadline);
  }
  RETURN_IF_ERROR(AddSeconds(body, "estimate_seconds", o.estimate));
  RETURN_IF_ERROR(AddSeconds(body, "max_runtime_seconds", o.max_runtime));
  RETURN_IF_ERROR(AddSeconds(body, "checkpoint_interval_seconds", o.checkpoint_interval));
  if (!o.tolerance.empty()) body["tolerance"] = o.tolerance;
  for (const auto& dep : o.after) {  // validated when parsed: JOB[:ok|:any]
    const auto colon = dep.find(':');
    const std::int64_t id = std::stoll(dep.substr(0, colon));
    const bool any = colon != std::string::npos && dep.substr(colon + 1) == "any";
    body[any ? "after_any" : "after"].push_back(id);
  }
  RETURN_IF_ERROR(AddKeyValues(body, "labels", o.labels));
  RETURN_IF_ERROR(AddKeyValues(body, "env", o.env));
  if (!o.name.empty()) body["name"] = o.name;
  if (!o.project.empty()) body["project"] = o.project;
  if (o.max_attempts) body["max_attempts"] = *o.max_attempts;
  if (!o.after_arrays.empty()) body["after_arrays"] = o.after_arrays;
  return body;
}

}  // namespace frugal::cli
