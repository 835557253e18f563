// `frugal admin apply`: the desired cluster (pools, teams, quotas, budgets, idle policies,
// guardrails) brought about in one transaction, through the same audited helpers as the single-change admin methods, so the
// diff, the audit rows and the checks are those of the single commands. A dry run does the
// same work inside a savepoint and rolls it back: its diff and its errors are exactly what
// the real apply would give.
#include <set>

#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace {

// The part of the file at fault, in front of the message and as the field.
Status At(const Status& st, const std::string& part, const std::string& name) {
  return Status(st.code(), part + " (" + name + "): " + st.message(), part);
}

}  // namespace

StatusOr<std::vector<ConfigChange>> PgStore::ApplyConfig(const Principal& actor,
                                                         const DesiredState& desired,
                                                         bool dry_run) {
  using Out = std::vector<ConfigChange>;
  return InTransaction<Out>(pool_, [&](PgConn& c) -> StatusOr<Out> {
    // Two applies at once would each diff against a state the other is changing. (Keys in
    // use: ...391 migrations, ...392 bootstrap, ...393 the leader lock.)
    RETURN_IF_ERROR(c.Exec("apply_lock", "SELECT pg_advisory_xact_lock(4640228712035394)").status());
    if (dry_run) RETURN_IF_ERROR(c.ExecScript("SAVEPOINT dry_run").status());
    Out out;
    std::set<std::string> seen;
    for (size_t i = 0; i < desired.pools.size(); ++i) {
      const auto& p = desired.pools[i];
      const std::string part = "pools[" + std::to_string(i) + "]";
      if (!seen.insert(p.name).second)
        return InvalidArgument(part + ": pool '" + p.name + "' appears twice", part);
      auto changed = pg::UpsertPoolTx(c, actor, p);
      if (!changed.ok()) return At(changed.status(), part, p.name);
      out.push_back(changed->change);
    }
    seen.clear();
    for (size_t i = 0; i < desired.teams.size(); ++i) {
      const auto& t = desired.teams[i];
      const std::string part = "teams[" + std::to_string(i) + "]";
      if (!seen.insert(t.name).second)
        return InvalidArgument(part + ": team '" + t.name + "' appears twice", part);
      auto team = pg::CreateTeamTx(c, actor, t.name, /*exist_ok=*/true);
      if (!team.ok()) return At(team.status(), part, t.name);
      out.push_back(team->change);
      if (!t.quota) continue;
      auto quota = pg::SetQuotaTx(c, actor, t.name, *t.quota);
      if (!quota.ok()) return At(quota.status(), part + ".quota", t.name);
      // A new team's quota is created, not updated: it had none before.
      if (team->change.kind == ConfigChange::Kind::kCreated &&
          quota->change.kind == ConfigChange::Kind::kUpdated)
        quota->change.kind = ConfigChange::Kind::kCreated;
      out.push_back(quota->change);
    }
    // Budgets and idle policies after every team exists; each under its team's path.
    for (size_t i = 0; i < desired.teams.size(); ++i) {
      const auto& t = desired.teams[i];
      const std::string part = "teams[" + std::to_string(i) + "]";
      if (t.budget) {
        auto budget = pg::SetBudgetTx(c, actor, t.name, *t.budget);
        if (!budget.ok()) return At(budget.status(), part + ".budget", t.name);
        out.push_back(*budget);
      }
      if (t.idle_policy) {
        auto idle = pg::SetTeamIdlePolicyTx(c, actor, t.name, *t.idle_policy);
        if (!idle.ok()) return At(idle.status(), part + ".idle_policy", t.name);
        out.push_back(*idle);
      }
    }
    if (desired.guardrails) {
      auto g = pg::SetGuardrailsTx(c, actor, *desired.guardrails);
      if (!g.ok()) return At(g.status(), "guardrails", "settings");
      out.push_back(*g);
    }
    if (dry_run) RETURN_IF_ERROR(c.ExecScript("ROLLBACK TO SAVEPOINT dry_run").status());
    return out;
  });
}

}  // namespace frugal::store
