// Admin routes for tokens (list, revoke), the audit log and `frugal admin apply`. Admin role
// only. Apply's document is the YAML file turned into JSON by the CLI; every error names
// the path of the part at fault ("teams[1].quota.spot_gpus").
#include <cstdlib>

#include "api/routes.h"
#include "api/webhook_sender.h"

namespace frugal::api {

namespace {

// `path` in front of a decoder's error, so the admin finds the key in the file.
Status AtPath(const Status& st, const std::string& path) {
  const std::string field = st.field().empty() ? path : path + "." + st.field();
  return Status(st.code(), path + ": " + st.message(), field);
}

// YAML has no string/number distinction the CLI could keep, so a pool's numbers may arrive
// as text ("1.5") and a whole-dollar price as a number (2): normalise both before the
// pool decoder, which wants numbers as numbers and money as text.
StatusOr<json> NormalisePool(json p) {
  if (!p.is_object()) return InvalidArgument("must be a mapping of pool fields");
  if (p.contains("price_per_gpu_hour") && p["price_per_gpu_hour"].is_number_integer())
    p["price_per_gpu_hour"] = std::to_string(p["price_per_gpu_hour"].get<long long>());
  for (const char* f : {"speed", "preemption_prior_per_node_hour"}) {
    if (!p.contains(f) || !p[f].is_string()) continue;
    const std::string text = p[f].get<std::string>();
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0')
      return InvalidArgument(std::string(f) + ": must be a number, got '" + text.substr(0, 32) + "'",
                             f);
    p[f] = v;
  }
  return p;
}

// A team's budget as the budget route takes it; a whole-dollar limit may arrive from YAML
// as a number.
StatusOr<store::BudgetSpec> DecodeTeamBudget(json b) {
  if (!b.is_object()) return InvalidArgument("must be a mapping of budget fields");
  if (b.contains("limit") && b["limit"].is_number_integer())
    b["limit"] = std::to_string(b["limit"].get<long long>());
  ASSIGN_OR_RETURN(auto budget, DecodeBudget(b));
  if (b.contains("webhook_url") && !b["webhook_url"].is_null())
    RETURN_IF_ERROR(CheckWebhookUrl(budget.webhook_url));
  return budget;
}

StatusOr<store::DesiredState> DecodeCluster(const json& body, Context& ctx) {
  RETURN_IF_ERROR(CheckFields(body, {"pools", "teams", "guardrails"}));
  store::DesiredState out;
  for (const char* section : {"pools", "teams"}) {
    if (body.contains(section) && !body[section].is_array() && !body[section].is_null())
      return InvalidArgument(std::string(section) + ": must be a list", section);
    if (body.contains(section) && body[section].size() > 1000)
      return InvalidArgument(std::string(section) + ": at most 1000 entries", section);
  }
  if (body.contains("pools") && body["pools"].is_array()) {
    for (size_t i = 0; i < body["pools"].size(); ++i) {
      const std::string path = "pools[" + std::to_string(i) + "]";
      auto normal = NormalisePool(body["pools"][i]);
      if (!normal.ok()) return AtPath(normal.status(), path);
      auto pool = DecodePool(*normal);
      if (!pool.ok()) return AtPath(pool.status(), path);
      out.pools.push_back(std::move(*pool));
    }
  }
  if (body.contains("teams") && body["teams"].is_array()) {
    for (size_t i = 0; i < body["teams"].size(); ++i) {
      const std::string path = "teams[" + std::to_string(i) + "]";
      const json& t = body["teams"][i];
      if (!t.is_object()) return InvalidArgument(path + ": must be a mapping", path);
      if (auto st = CheckFields(t, {"name", "quota", "budget", "idle_policy"}); !st.ok())
        return AtPath(st, path);
      store::TeamConfig team;
      auto name = RequiredString(t, "name");
      if (!name.ok()) return AtPath(name.status(), path);
      team.name = *name;
      if (auto st = ValidateName(team.name, "name", false); !st.ok()) return AtPath(st, path);
      if (t.contains("quota") && !t["quota"].is_null()) {
        if (!t["quota"].is_object())
          return InvalidArgument(path + ".quota: must be a mapping", path + ".quota");
        auto quota = DecodeQuota(t["quota"]);
        if (!quota.ok()) return AtPath(quota.status(), path + ".quota");
        team.quota = std::move(*quota);
      }
      if (t.contains("budget") && !t["budget"].is_null()) {
        auto budget = DecodeTeamBudget(t["budget"]);
        if (!budget.ok()) return AtPath(budget.status(), path + ".budget");
        team.budget = std::move(*budget);
      }
      if (t.contains("idle_policy") && !t["idle_policy"].is_null()) {
        auto text = RequiredString(t, "idle_policy");
        if (!text.ok()) return AtPath(text.status(), path);
        auto policy = model::ParseIdlePolicy(*text);
        if (!policy.ok()) return AtPath(policy.status(), path + ".idle_policy");
        team.idle_policy = *policy;
      }
      out.teams.push_back(std::move(team));
    }
  }
  if (body.contains("guardrails") && !body["guardrails"].is_null()) {
    const json& g = body["guardrails"];
    if (!g.is_object()) return InvalidArgument("guardrails: must be a mapping", "guardrails");
    // Merged over the current settings, as POST /v1/admin/guardrails does; apply's
    // transaction then diffs the result against what is stored.
    ASSIGN_OR_RETURN(auto settings, ctx.store.GetGuardrails());
    if (auto st = MergeSettings(g, settings); !st.ok()) return AtPath(st, "guardrails");
    out.guardrails = std::move(settings);
  }
  return out;
}

StatusOr<bool> ParseBool(const std::string& v, const char* field) {
  if (v == "true" || v == "1") return true;
  if (v == "false" || v == "0") return false;
  return InvalidArgument(std::string(field) + " must be true or false", field);
}

StatusOr<store::AuditFilter> ParseAuditFilter(const httplib::Request& req) {
  RETURN_IF_ERROR(CheckQueryParams(req, {"since", "action", "limit"}));
  const Query q = ParseQuery(req);
  store::AuditFilter f;
  if (auto it = q.find("since"); it != q.end()) {
    auto t = ParseRfc3339(it->second);
    if (!t.ok()) return InvalidArgument("since must be an RFC 3339 time", "since");
    f.since = *t;
  }
  if (auto it = q.find("action"); it != q.end()) {
    if (it->second.empty() || it->second.size() > 64)
      return InvalidArgument("action must be 1 to 64 characters", "action");
    f.action = it->second;
  }
  if (auto it = q.find("limit"); it != q.end()) {
    const std::string& v = it->second;
    if (v.empty() || v.size() > 4 || v.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(v) < 1 || std::stoi(v) > 1000)
      return InvalidArgument("limit must be an integer between 1 and 1000", "limit");
    f.limit = std::stoi(v);
  }
  return f;
}

}  // namespace

void RegisterAdminAuditRoutes(Router& s, Context& ctx) {
  s.Get("/v1/admin/tokens", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                           -> StatusOr<Reply> {
          RETURN_IF_ERROR(CheckQueryParams(req, {}));
          ASSIGN_OR_RETURN(auto tokens, ctx.store.ListTokens());
          json out = json::array();
          for (const auto& t : tokens) out.push_back(EncodeToken(t));
          return Reply{200, {{"tokens", out}}};
        }));

  s.Post(R"(/v1/admin/tokens/([^/]+)/revoke)",
         Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto& who)
                                        -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {}));
           ASSIGN_OR_RETURN(auto id, ParseId(req.matches[1], "id"));
           ASSIGN_OR_RETURN(auto token, ctx.store.RevokeToken(*who, id));
           return Reply{200, EncodeToken(token)};
         }));

  s.Get("/v1/admin/audit", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req, auto&)
                                                          -> StatusOr<Reply> {
          ASSIGN_OR_RETURN(auto filter, ParseAuditFilter(req));
          ASSIGN_OR_RETURN(auto entries, ctx.store.ListAudit(filter));
          json out = json::array();
          for (const auto& e : entries) out.push_back(EncodeAudit(e));
          return Reply{200, {{"entries", out}}};
        }));

  s.Post("/v1/admin/apply", Route(ctx, Access::kAdmin, [&ctx](const httplib::Request& req,
                                                              auto& who) -> StatusOr<Reply> {
           RETURN_IF_ERROR(CheckQueryParams(req, {"dry_run"}));
           const Query q = ParseQuery(req);
           bool dry_run = false;
           if (auto it = q.find("dry_run"); it != q.end()) {
             ASSIGN_OR_RETURN(dry_run, ParseBool(it->second, "dry_run"));
           }
           ASSIGN_OR_RETURN(json body, ParseObject(req.body));
           ASSIGN_OR_RETURN(auto desired, DecodeCluster(body, ctx));
           ASSIGN_OR_RETURN(auto changes, ctx.store.ApplyConfig(*who, desired, dry_run));
           json out = json::array();
           json summary = {{"created", 0}, {"updated", 0}, {"unchanged", 0}};
           int changed = 0;
           for (const auto& c : changes) {
             const char* kind = store::ToString(c.kind);
             summary[kind] = summary[kind].get<int>() + 1;
             if (c.kind != store::ConfigChange::Kind::kUnchanged) ++changed;
             out.push_back({{"change", kind},
                            {"subject", c.subject},
                            {"before", json::parse(c.before)},
                            {"after", json::parse(c.after)}});
           }
           if (!dry_run && changed > 0) ctx.engine.Kick();  // new capacity or quota
           return Reply{200, {{"dry_run", dry_run},
                              {"changes", out},
                              {"summary", summary},
                              {"applied", dry_run ? 0 : changed}}};
         }));
}

}  // namespace frugal::api
