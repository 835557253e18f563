// Planner statistics that keep up with bursts (decision 0040).
//
// PostgreSQL caches a generic plan per prepared statement once it costs no more than the
// custom ones, and keeps it until the table's statistics change. A plan made while a
// table was nearly empty (a fresh database, the first seconds of a burst) scans the whole
// table where an index would find a few rows, and autovacuum, which looks once a minute,
// is what would replace it. In a no-op drain of 20,000 jobs on a fresh database the
// finish path's statements ran 3 to 4 times slower for the whole drain that way.
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

StatusOr<std::vector<std::string>> PgStore::RefreshStatistics() {
  // ANALYZE only writes statistics, so running it twice is harmless: safe to repeat.
  return Autocommit<std::vector<std::string>>(
      pool_, Repeat::kReads, [](PgConn& c) -> StatusOr<std::vector<std::string>> {
        // Autovacuum's analyze threshold (50 rows + 10% of the table), over the tables of
        // the schema the store's statements use. reltuples is -1 before any ANALYZE.
        // At once only where the table's size is no longer what its statistics say (half
        // or twice as many live rows, and 50 more, or none gathered yet): plans made for the wrong
        // size are what go badly wrong. A table whose rows only changed (a drain moves every job
        // twice) waits for autovacuum's own interval since its last analysis, a minute: analyzing
        // `jobs` every second of a drain took a tenth of the database's time (decision 0048).
        ASSIGN_OR_RETURN(auto r,
                         c.Exec("statistics_stale",
                                "SELECT s.relname, format('%I.%I', s.schemaname, s.relname)"
                                " FROM pg_stat_user_tables s JOIN pg_class k ON k.oid = s.relid"
                                " WHERE s.schemaname = current_schema()"
                                " AND s.n_mod_since_analyze > 50 + 0.1 * greatest(k.reltuples, 0)"
                                " AND (k.reltuples < 0 OR s.n_live_tup > 2 * k.reltuples + 50"
                                " OR s.n_live_tup < k.reltuples / 2"
                                " OR coalesce(greatest(s.last_analyze, s.last_autoanalyze),"
                                " '-infinity') < now() - interval '1 minute')"
                                " ORDER BY s.n_mod_since_analyze DESC"));
        std::vector<std::string> analyzed;
        for (int i = 0; i < r.rows(); ++i) {
          // SKIP_LOCKED: autovacuum or another scheduler may be analyzing it right now.
          RETURN_IF_ERROR(c.ExecScript("ANALYZE (SKIP_LOCKED) " + r.Text(i, 1)).status());
          analyzed.push_back(r.Text(i, 0));
        }
        return analyzed;
      });
}

}  // namespace frugal::store
