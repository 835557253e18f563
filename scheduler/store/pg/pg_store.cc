// PgStore: connection management, auth, admin and capacity.
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

#include "scheduler/store/pg/pg_audit.h"

namespace frugal::store {

const char* ToString(ConfigChange::Kind k) {
  switch (k) {
    case ConfigChange::Kind::kCreated: return "created";
    case ConfigChange::Kind::kUpdated: return "updated";
    case ConfigChange::Kind::kUnchanged: return "unchanged";
  }
  return "unknown";
}

PgStore::PgStore(std::string conninfo, int pool_size, PgConnOptions options)
    : pool_owner_(std::make_unique<PgPool>(std::move(conninfo), pool_size, options)),
      pool_(*pool_owner_),
      instance_id_(pg::NewInstanceId()) {}

PgStore::~PgStore() = default;

Status PgStore::Ping() {
  auto r = Autocommit<int>(pool_, Repeat::kReads, [](PgConn& c) -> StatusOr<int> {
    ASSIGN_OR_RETURN(auto res, c.Exec("ping", "SELECT 1"));
    return static_cast<int>(res.Int(0, 0));
  });
  return r.status();
}

StatusOr<Principal> PgStore::Authenticate(const std::string& token_sha256) {
  // Two statements outside a transaction: a token and a node credential are separate facts.
  return Autocommit<Principal>(pool_, Repeat::kReads, [&](PgConn& c) -> StatusOr<Principal> {
    ASSIGN_OR_RETURN(auto r, c.Exec("authenticate",
                                    "SELECT k.id, k.role, k.team_id, t.name, k.user_id, u.name"
                                    " FROM api_tokens k JOIN teams t ON t.id = k.team_id"
                                    " JOIN users u ON u.id = k.user_id"
                                    " WHERE k.token_sha256 = $1 AND k.revoked_at IS NULL",
                                    {token_sha256}));
    if (r.rows() == 0) {
      // Not an API token: it may be a node credential (decision 0019).
      ASSIGN_OR_RETURN(auto n, c.Exec("authenticate_node",
                                      "SELECT id, name FROM nodes WHERE credential_sha256 = $1",
                                      {token_sha256}));
      if (n.rows() == 0) return Status(StatusCode::kUnauthenticated, "invalid or revoked token");
      Principal p;
      p.role = Role::kNode;
      p.node_id = n.Int(0, 0);
      p.user = n.Text(0, 1);
      return p;
    }
    Principal p;
    p.token_id = r.Int(0, 0);
    p.role = ParseRole(r.Text(0, 1)).value();
    p.team_id = r.Int(0, 2);
    p.team = r.Text(0, 3);
    p.user_id = r.Int(0, 4);
    p.user = r.Text(0, 5);
    return p;
  });
}

StatusOr<std::vector<Team>> PgStore::ListTeams() {
  return InTransaction<std::vector<Team>>(pool_, [&](PgConn& c) -> StatusOr<std::vector<Team>> {
    ASSIGN_OR_RETURN(auto r, c.Exec("list_teams", "SELECT id, name FROM teams ORDER BY name"));
    std::vector<Team> out;
    for (int i = 0; i < r.rows(); ++i) out.push_back({r.Int(i, 0), r.Text(i, 1)});
    return out;
  });
}

namespace {

// Audited as `action` ("token.create" or "bootstrap").
StatusOr<IssuedToken> InsertToken(PgConn& c, const Principal& actor, const char* action,
                                  const std::string& team,
                                  const std::string& user, Role role,
                                  const std::string& token_sha256) {
  ASSIGN_OR_RETURN(auto t, c.Exec("team_id_by_name", "SELECT id FROM teams WHERE name = $1", {team}));
  if (t.rows() == 0) return FailedPrecondition("unknown team '" + team + "'", "team");
  const std::string team_id = t.Text(0, 0);
  ASSIGN_OR_RETURN(auto u, c.Exec("upsert_user",
                                  "INSERT INTO users (team_id, name) VALUES ($1, $2)"
                                  " ON CONFLICT (team_id, name) DO UPDATE SET name = EXCLUDED.name"
                                  " RETURNING id",
                                  {team_id, user}));
  ASSIGN_OR_RETURN(auto k, c.Exec("insert_token",
                                  "INSERT INTO api_tokens (token_sha256, role, team_id, user_id)"
                                  " VALUES ($1, $2, $3, $4) RETURNING id",
                                  {token_sha256, ToString(role), team_id, u.Text(0, 0)}));
  IssuedToken issued{k.Int(0, 0), role, team, user};
  RETURN_IF_ERROR(pg::AppendAudit(
      c, actor, action,
      "token/" + std::to_string(issued.id), nullptr,
      {{"id", issued.id}, {"role", ToString(role)}, {"team", team}, {"user", user}}));
  return issued;
}

}  // namespace

StatusOr<IssuedToken> PgStore::CreateToken(const Principal& actor, const std::string& team,
                                           const std::string& user, Role role,
                                           const std::string& token_sha256) {
  return InTransaction<IssuedToken>(pool_, [&](PgConn& c) {
    return InsertToken(c, actor, "token.create", team, user, role, token_sha256);
  });
}

StatusOr<IssuedToken> PgStore::Bootstrap(const std::string& token_sha256) {
  return InTransaction<IssuedToken>(pool_, [&](PgConn& c) -> StatusOr<IssuedToken> {
    // Two bootstraps at once must not both succeed.
    RETURN_IF_ERROR(c.Exec("bootstrap_lock", "SELECT pg_advisory_xact_lock(4640228712035392)").status());
    ASSIGN_OR_RETURN(auto r, c.Exec("admin_exists",
                                    "SELECT 1 FROM api_tokens WHERE role = 'admin'"
                                    " AND revoked_at IS NULL LIMIT 1"));
    if (r.rows() > 0) {
      return FailedPrecondition(
          "already bootstrapped: an admin token exists; create more tokens with the admin API");
    }
    RETURN_IF_ERROR(c.Exec("bootstrap_team",
                           "INSERT INTO teams (name) VALUES ('admin') ON CONFLICT DO NOTHING")
                        .status());
    Principal bootstrap;  // no token: it is being created
    bootstrap.user = "bootstrap";
    bootstrap.team = "admin";
    return InsertToken(c, bootstrap, "bootstrap", "admin", "admin", Role::kAdmin, token_sha256);
  });
}

}  // namespace frugal::store
