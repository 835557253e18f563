// Leadership as a lease with a fencing term (migrations/0017_add_leader_lease.sql,
// decision 0020). A session advisory lock lasts as long as its connection, so a frozen
// leader (SIGSTOP, a long GC-like stall, a half-open network) kept it and nothing was
// placed; a lease in database time ends by itself, and the term fences the old holder's
// writes once it wakes up.
#include <unistd.h>

#include <algorithm>

#include "common/crypto.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

namespace pg {

std::string NewInstanceId() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  // 128 random bits: another scheduler cannot pass for this one by guessing.
  return std::string(host) + ":" + std::to_string(getpid()) + ":" + NewSecretHex().substr(0, 32);
}

}  // namespace pg

std::string PgStore::LostReason(PgConn& c, std::int64_t term) {
  // Worded by the database, as the fence's refusal is (migration 0032).
  auto r =
      c.Exec("leader_lost_reason", "SELECT frugal_leader_lost_reason($1)", {std::to_string(term)});
  if (!r.ok()) return "lease row unreadable: " + r.status().ToString();
  return r->Text(0, 0);
}

StatusOr<LeaderStatus> PgStore::TryLeadership(std::chrono::milliseconds ttl) {
  std::lock_guard<std::mutex> lock(leader_mu_);
  const std::string ttl_ms = std::to_string(ttl.count());
  LeaderStatus out;
  // A lease renewed less than half a ttl ago still has more than half to run: a busy
  // scheduler cycles hundreds of times a second, and each renewal is a commit (decision
  // 0036). Every write is still fenced by the lease's expiry in the database, so a term lost
  // some other way is found by the next write, which is refused.
  const auto sent = std::chrono::steady_clock::now();
  if (term_ > 0 && ttl == lease_ttl_ && sent - renewed_at_ < ttl / 2) {
    out.leader = true;
    out.term = term_;
    return out;
  }
  lease_ttl_ = ttl;
  auto done = InTransaction<bool>(pool_, [&](PgConn& c) -> StatusOr<bool> {
    if (term_ > 0) {
      // Renew only the term we hold, and only while unexpired: once it has lapsed another
      // scheduler may already have taken it, or may at any moment.
      ASSIGN_OR_RETURN(auto r, c.Exec("leader_renew",
                                      "UPDATE leader_lease SET expires_at = clock_timestamp()"
                                      " + $3 * interval '1 millisecond' WHERE term = $1"
                                      " AND holder = $2 AND expires_at > clock_timestamp()"
                                      " RETURNING term",
                                      {std::to_string(term_), instance_id_, ttl_ms}));
      if (r.rows() == 1) {
        out.leader = true;
        out.term = term_;
        renewed_at_ = sent;
        return true;
      }
      out.lost_reason = LostReason(c, term_);
      term_ = 0;
    }
    // SKIP LOCKED: the row is locked FOR SHARE while the current leader applies, and a
    // standby must not queue behind it (a frozen leader's transaction is ended by
    // idle_in_transaction_session_timeout, set by the fence).
    ASSIGN_OR_RETURN(auto a, c.Exec("leader_acquire",
                                    "WITH cur AS (SELECT id FROM leader_lease WHERE"
                                    " expires_at <= clock_timestamp() FOR UPDATE SKIP LOCKED)"
                                    " UPDATE leader_lease l SET term = l.term + 1, holder = $1,"
                                    " acquired_at = clock_timestamp(), expires_at ="
                                    " clock_timestamp() + $2 * interval '1 millisecond'"
                                    " FROM cur WHERE l.id = cur.id RETURNING l.term",
                                    {instance_id_, ttl_ms}));
    if (a.rows() == 1) {
      term_ = a.Int(0, 0);
      renewed_at_ = sent;
      out.leader = out.acquired = true;
      out.term = term_;
      return true;
    }
    ASSIGN_OR_RETURN(auto t, c.Exec("leader_term", "SELECT term FROM leader_lease"));
    if (t.rows() == 1) out.term = t.Int(0, 0);
    return true;
  });
  if (!done.ok()) {
    // Cannot tell whether the lease was renewed: stop acting as leader now; the fence
    // would refuse anyway once it lapses.
    term_ = 0;
    return done.status();
  }
  return out;
}

Status PgStore::ReleaseLeadership() {
  std::lock_guard<std::mutex> lock(leader_mu_);
  if (term_ == 0) return Status::Ok();
  const std::string term = std::to_string(term_);
  term_ = 0;
  return InTransaction<bool>(pool_, [&](PgConn& c) -> StatusOr<bool> {
           RETURN_IF_ERROR(c.Exec("leader_release",
                                  "UPDATE leader_lease SET expires_at = clock_timestamp()"
                                  " WHERE term = $1 AND holder = $2"
                                  " AND expires_at > clock_timestamp()",
                                  {term, instance_id_})
                               .status());
           return true;
         })
      .status();
}

StatusOr<PgStatement> PgStore::LeaderFence(std::int64_t* term) {
  std::chrono::milliseconds ttl;
  {
    std::lock_guard<std::mutex> lock(leader_mu_);
    *term = term_;
    ttl = lease_ttl_;
  }
  if (*term == 0) return NotLeader("this scheduler holds no leader term");
  // frugal_leader_fence (migration 0031) raises NotLeader's error when the term is not held,
  // which aborts whatever was sent behind it. Otherwise the lease row stays locked FOR SHARE
  // until commit, and if this process freezes inside the transaction the server ends the
  // session after a lease's length of silence (idle_in_transaction_session_timeout, set by
  // the same call; decision 0048), so a standby is held up at most that long.
  return PgStatement{"leader_fence",
                     "SELECT frugal_leader_fence($1, $2, $3)",
                     {std::to_string(*term), instance_id_,
                      std::to_string(std::max<std::int64_t>(ttl.count(), 1000))}};
}

Status PgStore::FenceChecked(const Status& st, std::int64_t term) {
  if (IsNotLeader(st)) {
    std::lock_guard<std::mutex> lock(leader_mu_);
    if (term_ == term) term_ = 0;
  }
  return st;
}

Status PgStore::CheckLeaderFence(PgConn& c) {
  std::int64_t term = 0;
  ASSIGN_OR_RETURN(auto fence, LeaderFence(&term));
  return FenceChecked(c.Exec(fence).status(), term);
}

}  // namespace frugal::store
