// Job arrays in the CLI (decision 0026): `submit --array`, and `status`, `cancel`, `cost`
// with `--array ID` for the whole sweep (`list --array ID` lists its tasks).
#include <map>

#include "cli/arrays.h"
#include "cli/format.h"

namespace frugal::cli {

using nlohmann::json;

namespace {

std::string ArrayPath(std::int64_t id) { return "/v1/arrays/" + std::to_string(id); }

// "7 tasks: 3 running, 4 pending"
std::string StatesLine(const json& a) {
  std::string states;
  const json& s = Field(a, "states");
  if (s.is_object()) {
    for (const auto& [state, n] : s.items())
      states += (states.empty() ? "" : ", ") + n.dump() + " " + state;
  }
  return Field(a, "task_count").dump() + " tasks" + (states.empty() ? "" : ": " + states);
}

std::string ArrayText(const json& a) {
  Table t({"FIELD", "VALUE"});
  const std::string step = Field(a, "step") == 1 ? "" : ":" + Field(a, "step").dump();
  t.AddRow({"array", Field(a, "id").dump()});
  if (!Text(a, "name").empty()) t.AddRow({"name", Text(a, "name")});
  t.AddRow({"indices", Field(a, "first").dump() + "-" + Field(a, "last").dump() + step});
  t.AddRow({"tasks", StatesLine(a)});
  t.AddRow({"jobs", Field(a, "first_job").dump() + " to " + Field(a, "last_job").dump()});
  if (!Field(a, "max_running").is_null())
    t.AddRow({"max running", Field(a, "max_running").dump()});
  t.AddRow({"owner", Text(a, "team") + "/" + Text(a, "user")});
  t.AddRow({"cost", "$" + Text(a, "cost")});
  t.AddRow({"wasted", "$" + Text(a, "wasted")});
  return t.Render();
}

}  // namespace

StatusOr<ArraySpec> ParseArraySpec(const std::string& text) {
  const auto bad = [&] {
    return InvalidArgument("--array: expected FIRST-LAST[:STEP][%MAX_RUNNING] (0-99, 0-99:2%8) "
                           "or a count N (0 to N-1), got '" + text + "'");
  };
  auto number = [](const std::string& s) -> std::optional<int> {
    if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    return std::stoi(s);
  };
  ArraySpec spec;
  std::string rest = text;
  if (const auto pct = rest.find('%'); pct != std::string::npos) {
    auto m = number(rest.substr(pct + 1));
    if (!m || *m < 1) return bad();
    spec.max_running = *m;
    rest = rest.substr(0, pct);
  }
  if (const auto colon = rest.find(':'); colon != std::string::npos) {
    auto st = number(rest.substr(colon + 1));
    if (!st || *st < 1) return bad();
    spec.step = *st;
    rest = rest.substr(0, colon);
  }
  if (const auto dash = rest.find('-'); dash != std::string::npos) {
    auto first = number(rest.substr(0, dash));
    auto last = number(rest.substr(dash + 1));
    if (!first || !last || *last < *first) return bad();
    spec.first = *first;
    spec.last = *last;
  } else {
    auto n = number(rest);
    if (!n || *n < 1 || spec.step != 1) return bad();
    spec.first = 0;
    spec.last = *n - 1;
  }
  return spec;
}

Status RunSubmitArray(Session& s, const SubmitOptions& o) {
  ASSIGN_OR_RETURN(ArraySpec spec, ParseArraySpec(o.array));
  ASSIGN_OR_RETURN(json job, BuildSubmitBody(o, s.now));
  json body = {{"job", job}, {"first", spec.first}, {"last", spec.last}, {"step", spec.step}};
  if (spec.max_running) body["max_running"] = *spec.max_running;
  if (job.contains("after_arrays")) {
    body["after_arrays"] = job["after_arrays"];
    body["job"].erase("after_arrays");
  }
  if (o.after_array_index) body["after_array_index"] = *o.after_array_index;
  std::map<std::string, std::string> headers;
  if (!o.idempotency_key.empty()) headers["Idempotency-Key"] = o.idempotency_key;
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post("/v1/arrays", body, headers)));
  if (r.status == 200)
    s.err << "frugal: note: idempotency key already used with this request; showing the array "
             "it created\n";
  s.out << (s.output == OutputFormat::kJson
                ? PrettyJson(r.body)
                : "Array " + Field(r.body, "id").dump() + ": " +
                      Field(r.body, "task_count").dump() + " tasks, jobs " +
                      Field(r.body, "first_job").dump() + " to " +
                      Field(r.body, "last_job").dump() + ".\n");
  return Status::Ok();
}

Status RunArrayStatus(Session& s, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get(ArrayPath(id))));
  s.out << (s.output == OutputFormat::kJson ? PrettyJson(r.body) : ArrayText(r.body));
  return Status::Ok();
}

Status RunArrayCancel(Session& s, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Post(ArrayPath(id) + "/cancel")));
  s.out << (s.output == OutputFormat::kJson
                ? PrettyJson(r.body)
                : "Array " + std::to_string(id) + ": cancelled " +
                      Field(r.body, "cancelled").dump() + " unfinished task(s); " +
                      StatesLine(r.body) + ".\n");
  return Status::Ok();
}

Status RunArrayCost(Session& s, std::int64_t id) {
  ASSIGN_OR_RETURN(auto r, Checked(s.client.Get(ArrayPath(id))));
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson({{"array", Field(r.body, "id")},
                         {"cost", Field(r.body, "cost")},
                         {"wasted", Field(r.body, "wasted")},
                         {"task_count", Field(r.body, "task_count")},
                         {"states", Field(r.body, "states")}});
    return Status::Ok();
  }
  s.out << "Array " + std::to_string(id) + " cost $" + Text(r.body, "cost") + ", of which $" +
               Text(r.body, "wasted") + " wasted (" + StatesLine(r.body) + ").\n";
  return Status::Ok();
}

}  // namespace frugal::cli
