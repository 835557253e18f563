// `frugal admin apply|diff|get|audit` and `frugal admin token list|revoke`: the declarative
// side of administration. apply reads a YAML file (config/cluster.example.yaml), sends it as
// JSON to POST /v1/admin/apply and prints the server's diff; get reads the current state
// back as a table, JSON or YAML.
#include <CLI/CLI.hpp>
#include <fstream>
#include <optional>
#include <ostream>
#include <sstream>

#include "cli/command_table.h"
#include "cli/format.h"
#include "cli/yaml_json.h"

namespace frugal::cli {

namespace {

using nlohmann::json;

// The filters of `admin audit` (and `admin get audit`, which leaves them unset).
struct AuditOptions {
  std::string since, action;
  std::optional<int> limit;
};

StatusOr<api::ClientResponse> GetOk(Session& s, const std::string& path) {
  ASSIGN_OR_RETURN(auto r, s.client.Get(path));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  return r;
}

// JSON and YAML print the server's document; a table is rendered by `table`.
template <typename Fn>
void Show(Session& s, const json& body, Fn table) {
  if (s.output == OutputFormat::kJson) {
    s.out << PrettyJson(body);
  } else if (s.output == OutputFormat::kYaml) {
    s.out << JsonToYaml(body);
  } else {
    s.out << table();
  }
}

std::string Compact(const json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

// "+ pool/a" created, "~ pool/b" with each changed field before -> after, "= team/c".
void PrintDiff(Session& s, const json& changes) {
  for (const auto& c : changes) {
    const std::string kind = Text(c, "change");
    const std::string mark = kind == "created" ? "+" : kind == "updated" ? "~" : "=";
    s.out << mark << " " << Text(c, "subject") << "\n";
    if (kind != "updated") continue;
    const json& before = Field(c, "before");
    const json& after = Field(c, "after");
    if (!after.is_object()) continue;
    for (const auto& [key, value] : after.items()) {
      const json old = before.is_object() && before.contains(key) ? before[key] : json(nullptr);
      if (old != value) s.out << "    " << key << ": " << Compact(old) << " -> " << Compact(value) << "\n";
    }
  }
}

Status RunApply(Session& s, const std::string& file, bool dry_run) {
  std::ifstream in(file);
  if (!in) return InvalidArgument("cannot read " + file);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = YamlToJson(text.str());
  if (!doc.ok()) return InvalidArgument(file + ": " + doc.status().message());
  if (!doc->is_object()) return InvalidArgument(file + ": expected a mapping (pools:, teams:, ...)");
  ASSIGN_OR_RETURN(auto r, s.client.Post(std::string("/v1/admin/apply?dry_run=") +
                                             (dry_run ? "true" : "false"),
                                         *doc));
  RETURN_IF_ERROR(api::ResponseStatus(r));
  if (s.output != OutputFormat::kTable) {
    Show(s, r.body, [] { return std::string(); });
    return Status::Ok();
  }
  PrintDiff(s, Field(r.body, "changes"));
  const json& sum = Field(r.body, "summary");
  const int changes = sum.value("created", 0) + sum.value("updated", 0);
  if (dry_run) {
    s.out << "dry run: " << changes << " changes would be applied (" << sum.value("unchanged", 0)
          << " unchanged); nothing was changed\n";
  } else {
    s.out << "applied " << Text(r.body, "applied") << " changes (" << sum.value("unchanged", 0)
          << " unchanged)\n";
  }
  return Status::Ok();
}

std::string TokenTable(const json& tokens) {
  Table t({"ID", "ROLE", "TEAM", "USER", "CREATED", "REVOKED"});
  for (const auto& k : tokens) {
    t.AddRow({Text(k, "id"), Text(k, "role"), Text(k, "team"), Text(k, "user"),
              Text(k, "created_at"), Text(k, "revoked_at")});
  }
  return t.empty() ? "No tokens.\n" : t.Render();
}

std::string AuditTable(const json& entries) {
  Table t({"ID", "AT", "WHO", "ACTION", "SUBJECT"});
  for (const auto& e : entries) {
    t.AddRow({Text(e, "id"), Text(e, "at"), Text(e, "user") + "@" + Text(e, "team"),
              Text(e, "action"), Text(e, "subject")});
  }
  return t.empty() ? "No audit entries.\n" : t.Render();
}

std::string PoolTable(const json& pools) {
  Table t({"NAME", "KIND", "GPU TYPE", "MEM GB", "MAX GPUS", "$/GPU-HOUR"});
  for (const auto& p : pools) {
    t.AddRow({Text(p, "name"), Text(p, "capacity_kind"), Text(p, "gpu_type"),
              Text(p, "gpu_mem_gb"), Text(p, "max_gpus"), Text(p, "price_per_gpu_hour")});
  }
  return t.empty() ? "No pools.\n" : t.Render();
}

std::string QuotaTable(const json& quotas) {
  Table t({"TEAM", "LIMIT", "GPUS"});
  for (const auto& q : quotas) {
    for (const char* kind : {"reserved_gpus", "on_demand_gpus", "spot_gpus"})
      if (!Field(q, kind).is_null()) t.AddRow({Text(q, "team"), kind, Text(q, kind)});
    for (const auto& [pool, max] : Field(q, "pools").items())
      t.AddRow({Text(q, "team"), "pool " + pool, max.dump()});
  }
  return t.empty() ? "No quotas.\n" : t.Render();
}

std::string AuditPath(const AuditOptions& o, Timestamp now) {
  std::string path = "/v1/admin/audit?limit=" + std::to_string(o.limit.value_or(50));
  if (!o.action.empty()) path += "&action=" + api::UrlEncode(o.action);
  if (!o.since.empty()) {
    // "-2h" / "2h" mean that long ago; anything else is sent as the RFC 3339 time it is.
    std::string since = o.since;
    const std::string d = since.front() == '-' ? since.substr(1) : since;
    if (auto ago = ParseDuration(d); ago.ok()) since = FormatRfc3339(now - *ago);
    path += "&since=" + api::UrlEncode(since);
  }
  return path;
}

// `kind` is one of pools, teams, quotas, tokens or audit (filtered by `audit`).
Status RunGet(Session& s, const std::string& kind, const AuditOptions& audit) {
  if (kind == "pools") {
    ASSIGN_OR_RETURN(auto r, GetOk(s, "/v1/admin/pools"));
    Show(s, r.body, [&] { return PoolTable(Field(r.body, "pools")); });
  } else if (kind == "teams") {
    ASSIGN_OR_RETURN(auto r, GetOk(s, "/v1/admin/teams"));
    Show(s, r.body, [&] { return RenderTeams(Field(r.body, "teams")); });
  } else if (kind == "quotas") {
    // One document of every team's quota (GET per team; admin clusters have few teams).
    ASSIGN_OR_RETURN(auto teams, GetOk(s, "/v1/admin/teams"));
    json quotas = json::array();
    for (const auto& t : Field(teams.body, "teams")) {
      ASSIGN_OR_RETURN(auto q, GetOk(s, "/v1/admin/teams/" + api::UrlEncode(Text(t, "name")) +
                                            "/quota"));
      quotas.push_back(q.body);
    }
    const json body = {{"quotas", quotas}};
    Show(s, body, [&] { return QuotaTable(quotas); });
  } else if (kind == "tokens") {
    ASSIGN_OR_RETURN(auto r, GetOk(s, "/v1/admin/tokens"));
    Show(s, r.body, [&] { return TokenTable(Field(r.body, "tokens")); });
  } else {  // audit (the validator allows nothing else)
    ASSIGN_OR_RETURN(auto r, GetOk(s, AuditPath(audit, s.now)));
    Show(s, r.body, [&] { return AuditTable(Field(r.body, "entries")); });
  }
  return Status::Ok();
}

// The cluster file that apply and diff read.
void AddFileFlag(CLI::App& sub, std::string& file) {
  sub.add_option("-f,--file", file, "Cluster file (see config/cluster.example.yaml)")
      ->required()
      ->check(CLI::ExistingFile);
}

class Apply final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* apply = parent.add_subcommand(
        "apply",
        "Bring the cluster to what a YAML file describes (creates and updates; never deletes)");
    AddFileFlag(*apply, file_);
    apply->add_flag("--dry-run", dry_run_, "Show the diff; change nothing");
    registrar.OnParsed(*apply, [this](Session& s) { return RunApply(s, file_, dry_run_); });
    registrar.AlsoPrints(*apply, {"yaml"});
  }

 private:
  std::string file_;
  bool dry_run_ = false;
};

// apply --dry-run under a name of its own.
class Diff final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* diff = parent.add_subcommand(
        "diff", "Show what 'apply -f FILE' would change; change nothing (apply --dry-run)");
    AddFileFlag(*diff, file_);
    registrar.OnParsed(*diff, [this](Session& s) { return RunApply(s, file_, /*dry_run=*/true); });
    registrar.AlsoPrints(*diff, {"yaml"});
  }

 private:
  std::string file_;
};

class Get final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* get =
        parent.add_subcommand("get", "Show pools, teams, quotas, tokens or the audit log");
    get->add_option("KIND", kind_, "pools, teams, quotas, tokens or audit")
        ->required()
        ->check(CLI::IsMember({"pools", "teams", "quotas", "tokens", "audit"}));
    registrar.OnParsed(*get, [this](Session& s) { return RunGet(s, kind_, AuditOptions{}); });
    registrar.AlsoPrints(*get, {"yaml"});
  }

 private:
  std::string kind_;
};

class Audit final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* audit =
        parent.add_subcommand("audit", "Show the audit log of admin changes, newest first");
    audit->add_option("--since", options_.since, "RFC 3339 time, or a duration ago (2h, -1d)");
    audit->add_option("--action", options_.action,
                      "Only this action (e.g. quota.set, token.revoke)");
    audit->add_option("--limit", options_.limit, "At most this many entries (default 50)")
        ->check(CLI::Range(1, 1000));
    registrar.OnParsed(*audit, [this](Session& s) { return RunGet(s, "audit", options_); });
    registrar.AlsoPrints(*audit, {"yaml"});
  }

 private:
  AuditOptions options_;
};

class TokenList final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* list = parent.add_subcommand("list", "List tokens (never their secrets)");
    registrar.OnParsed(*list, [](Session& s) { return RunGet(s, "tokens", AuditOptions{}); });
    registrar.AlsoPrints(*list, {"yaml"});
  }
};

class TokenRevoke final : public Command {
 public:
  void Register(CLI::App& parent, Registrar& registrar) override {
    CLI::App* revoke = parent.add_subcommand("revoke", "Revoke a token at once");
    revoke->add_option("ID", token_id_, "Token id (frugal admin token list)")
        ->required()
        ->check(CLI::PositiveNumber);
    registrar.OnParsed(*revoke, [this](Session& s) -> Status {
      ASSIGN_OR_RETURN(auto r,
                       s.client.Post("/v1/admin/tokens/" + std::to_string(token_id_) + "/revoke"));
      RETURN_IF_ERROR(api::ResponseStatus(r));
      Show(s, r.body, [&] {
        return "Revoked token " + Text(r.body, "id") + " (" + Text(r.body, "role") + " " +
               Text(r.body, "user") + "@" + Text(r.body, "team") + ").\n";
      });
      return Status::Ok();
    });
    registrar.AlsoPrints(*revoke, {"yaml"});
  }

 private:
  std::int64_t token_id_ = 0;
};

}  // namespace

std::unique_ptr<Command> NewApply() { return std::make_unique<Apply>(); }
std::unique_ptr<Command> NewDiff() { return std::make_unique<Diff>(); }
std::unique_ptr<Command> NewGet() { return std::make_unique<Get>(); }
std::unique_ptr<Command> NewAudit() { return std::make_unique<Audit>(); }
std::unique_ptr<Command> NewTokenList() { return std::make_unique<TokenList>(); }
std::unique_ptr<Command> NewTokenRevoke() { return std::make_unique<TokenRevoke>(); }

}  // namespace frugal::cli
