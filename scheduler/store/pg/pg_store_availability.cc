// Spot pools' learned availability (issue 14, decision 0023): the admin's import, the
// background refit from node lives and the exec provider's stockouts, and the admin's view. The cycle reads only the fitted
// model (LoadPools); everything here may take as long as reading every node life takes.
#include <chrono>

#include <nlohmann/json.hpp>

#include "scheduler/model/availability_history.h"
#include "scheduler/store/pg/pg_audit.h"
#include "scheduler/store/pg/pg_store.h"
#include "scheduler/store/pg/pg_store_internal.h"

namespace frugal::store {

using nlohmann::json;

namespace {

model::AvailabilityModel EmptyModel() {
  return model::AvailabilityModel::Empty(model::kAvailabilityTickSeconds,
                                         model::kAvailabilityBins);
}

bool SameShape(const model::AvailabilityModel& a, const model::AvailabilityModel& b) {
  return a.tick_seconds == b.tick_seconds && a.bin_start == b.bin_start &&
         a.stay.size() == b.stay.size() && a.onward.size() == b.onward.size() &&
         a.flip.size() == b.flip.size();
}

void AddCounts(model::AvailabilityModel& to, const model::AvailabilityModel& from) {
  for (size_t i = 0; i < to.stay.size(); ++i) {
    to.stay[i] += from.stay[i];
    to.onward[i] += from.onward[i];
    to.flip[i] += from.flip[i];
  }
}

struct PoolRow {
  model::PoolId id = 0;
  std::string name;
  bool spot = false;
};

StatusOr<PoolRow> FindPool(PgConn& c, const std::string& name) {
  ASSIGN_OR_RETURN(auto r, c.Exec("availability_find_pool",
                                  "SELECT id, capacity_kind = 'spot' FROM pools WHERE name = $1",
                                  {name}));
  if (r.rows() == 0) return NotFound("pool '" + name + "' not found");
  PoolRow p{r.Int(0, 0), name, r.Bool(0, 1)};
  if (!p.spot) {
    return FailedPrecondition("pool '" + name + "' is not a spot pool: only spot pools have an"
                              " availability model", "pool");
  }
  return p;
}

// Gang sizes fitted per pool at most: the smallest sizes that jobs not yet ended ask for.
constexpr int kMaxGangModels = 8;

// The gang sizes jobs not yet ended ask for (decision 0032), the smallest first: one read
// of the jobs per refit, shared by every pool.
StatusOr<std::vector<int>> GangSizesInUse(PgConn& c) {
  ASSIGN_OR_RETURN(auto r, c.Exec("availability_gang_sizes",
                                  "SELECT DISTINCT nodes FROM jobs WHERE nodes > 1 AND state"
                                  " IN ('pending', 'held', 'running') ORDER BY nodes LIMIT $1",
                                  {std::to_string(kMaxGangModels)}));
  std::vector<int> out;
  for (int i = 0; i < r.rows(); ++i) out.push_back(static_cast<int>(r.Int(i, 0)));
  return out;
}

// Reads the pool's node lives, adds their spells to its imported counts and writes the
// result as its fitted model, and a model per gang size of `gang_sizes` from the same
// lives (no import: a series says whether one instance could be had), all in the
// caller's transaction. Times are the database's.
StatusOr<RefitResult> RefitPoolTx(PgConn& c, const PoolRow& pool,
                                  const std::vector<int>& gang_sizes) {
  const auto t0 = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto r, c.Exec("availability_lives",
                                  "SELECT extract(epoch from n.registered_at), extract(epoch from "
                                  FRUGAL_LIFE_END("n") "), " FRUGAL_LIFE_RELEASED("n")
                                  " FROM nodes n WHERE n.pool_id = $1",
                                  {std::to_string(pool.id)}));
  // The exec provider's stockouts: a `create` the cloud refused for want of capacity.
  ASSIGN_OR_RETURN(auto so, c.Exec("availability_stockouts",
                                   "SELECT extract(epoch from ended_at) FROM instances"
                                   " WHERE pool_id = $1 AND reason = 'stockout'"
                                   " AND ended_at IS NOT NULL",
                                   {std::to_string(pool.id)}));
  ASSIGN_OR_RETURN(auto now, c.Exec("availability_now", "SELECT extract(epoch from now()),"
                                    " (SELECT imported_counts FROM pool_availability"
                                    "  WHERE pool_id = $1)",
                                    {std::to_string(pool.id)}));
  std::vector<model::NodeLife> lives;
  for (int i = 0; i < r.rows(); ++i)
    lives.push_back({r.Double(i, 0), r.Double(i, 1), r.Bool(i, 2)});
  std::vector<double> stockouts;
  for (int i = 0; i < so.rows(); ++i) stockouts.push_back(so.Double(i, 0));
  model::AvailabilityModel observed = EmptyModel();
  model::AddSpells(model::SpellsFromLives(lives, now.Double(0, 0), stockouts), observed);
  model::AvailabilityModel fitted = EmptyModel();
  model::AvailabilityModel imported;
  // An import of another shape cannot be (ImportAvailability refuses it); were one
  // written by hand, the observed counts alone are better than failing every refit.
  if (!now.IsNull(0, 1) && model::AvailabilityFromJson(now.Text(0, 1), &imported) &&
      SameShape(imported, fitted)) {
    AddCounts(fitted, imported);
  }
  AddCounts(fitted, observed);
  RefitResult out{pool.name, static_cast<int>(lives.size()), observed.ObservedTicks(), 0};
  // Each gang size in use (decision 0032): the same lives, up while that many overlap.
  std::vector<std::pair<int, model::AvailabilityModel>> gangs;
  for (const int nodes : gang_sizes) {
    model::AvailabilityModel m = EmptyModel();
    model::AddSpells(model::SpellsFromLives(lives, now.Double(0, 0), stockouts, nodes), m);
    gangs.emplace_back(nodes, std::move(m));
  }
  // The time to read and fit (the write is the same one statement for any pool).
  out.elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  RETURN_IF_ERROR(c.Exec("availability_write_fit",
                         "INSERT INTO pool_availability (pool_id, fitted_model, fitted_at,"
                         " observed_ticks, refit_ms) VALUES ($1, $2, now(), $3, $4)"
                         " ON CONFLICT (pool_id) DO UPDATE SET fitted_model = EXCLUDED.fitted_model,"
                         " fitted_at = EXCLUDED.fitted_at, observed_ticks ="
                         " EXCLUDED.observed_ticks, refit_ms = EXCLUDED.refit_ms",
                         {std::to_string(pool.id), model::AvailabilityToJson(fitted),
                          std::to_string(out.observed_ticks), std::to_string(out.elapsed_ms)})
                      .status());
  // Sizes no job asks for any more are dropped: a gang of such a size later starts from
  // the rules until the next refit, not from an old fit.
  std::string in_use = "{";
  for (const auto& [nodes, m] : gangs) in_use += (in_use.size() > 1 ? "," : "") + std::to_string(nodes);
  in_use += "}";
  RETURN_IF_ERROR(c.Exec("availability_drop_gang_fits",
                         "DELETE FROM pool_gang_availability WHERE pool_id = $1"
                         " AND nodes <> ALL ($2::int[])",
                         {std::to_string(pool.id), in_use})
                      .status());
  for (const auto& [nodes, m] : gangs) {
    RETURN_IF_ERROR(c.Exec("availability_write_gang_fit",
                           "INSERT INTO pool_gang_availability (pool_id, nodes, fitted_model,"
                           " fitted_at, observed_ticks) VALUES ($1, $2, $3, now(), $4)"
                           " ON CONFLICT (pool_id, nodes) DO UPDATE SET fitted_model ="
                           " EXCLUDED.fitted_model, fitted_at = EXCLUDED.fitted_at,"
                           " observed_ticks = EXCLUDED.observed_ticks",
                           {std::to_string(pool.id), std::to_string(nodes),
                            model::AvailabilityToJson(m), std::to_string(m.ObservedTicks())})
                        .status());
  }
  return out;
}

StatusOr<PoolAvailability> GetAvailabilityTx(PgConn& c, const PoolRow& pool) {
  ASSIGN_OR_RETURN(auto pools, pg::LoadPools(c));
  PoolAvailability out;
  out.pool = pool.name;
  for (const auto& p : pools) {
    if (p.id != pool.id) continue;
    out.now = p.availability_now;
    if (p.availability) out.model = *p.availability;
    // The admin's own expectations: what a pool with no history is assumed to do.
    out.prior = model::PriorFor(model::kAvailabilityTickSeconds, p.preemption_prior_per_node_hour,
                                model::kOutagePriorHours);
  }
  ASSIGN_OR_RETURN(auto r, c.Exec("availability_get",
                                  "SELECT observed_ticks, imported_ticks, imported_source, "
                                  FRUGAL_US("imported_at") ", " FRUGAL_US("fitted_at") ","
                                  " refit_ms FROM pool_availability WHERE pool_id = $1",
                                  {std::to_string(pool.id)}));
  if (r.rows() > 0) {
    out.observed_ticks = r.Double(0, 0);
    out.imported_ticks = r.Double(0, 1);
    if (!r.IsNull(0, 2)) out.imported_source = r.Text(0, 2);
    out.imported_at = pg::OptTime(r, 0, 3);
    out.fitted_at = pg::OptTime(r, 0, 4);
    if (!r.IsNull(0, 5)) out.refit_ms = r.Double(0, 5);
  }
  return out;
}

}  // namespace

StatusOr<PoolAvailability> PgStore::ImportAvailability(const Principal& actor,
                                                       const std::string& pool,
                                                       const model::AvailabilityModel& counts,
                                                       const std::string& source) {
  if (!SameShape(counts, EmptyModel())) {
    return InvalidArgument("imported counts must use " +
                               std::to_string(model::kAvailabilityTickSeconds) + " s ticks and " +
                               std::to_string(model::kAvailabilityBins) + " bins",
                           "counts");
  }
  return InTransaction<PoolAvailability>(pool_, [&](PgConn& c) -> StatusOr<PoolAvailability> {
    ASSIGN_OR_RETURN(auto p, FindPool(c, pool));
    ASSIGN_OR_RETURN(auto old, c.Exec("availability_old_import",
                                      "SELECT imported_source, imported_ticks FROM"
                                      " pool_availability WHERE pool_id = $1 FOR UPDATE",
                                      {std::to_string(p.id)}));
    json before = nullptr;
    if (old.rows() > 0 && !old.IsNull(0, 0)) {
      before = {{"source", old.Text(0, 0)}, {"ticks", old.Double(0, 1)}};
    }
    const double ticks = counts.ObservedTicks();
    RETURN_IF_ERROR(c.Exec("availability_import",
                           "INSERT INTO pool_availability (pool_id, imported_counts,"
                           " imported_source, imported_at, imported_ticks) VALUES ($1, $2, $3,"
                           " now(), $4) ON CONFLICT (pool_id) DO UPDATE SET imported_counts ="
                           " EXCLUDED.imported_counts, imported_source = EXCLUDED.imported_source,"
                           " imported_at = EXCLUDED.imported_at, imported_ticks ="
                           " EXCLUDED.imported_ticks",
                           {std::to_string(p.id), model::AvailabilityToJson(counts), source,
                            std::to_string(ticks)})
                        .status());
    RETURN_IF_ERROR(pg::AppendAudit(c, actor, "pool.availability_import", "pool/" + pool, before,
                                    {{"source", source}, {"ticks", ticks}}));
    // Usable at once: the policy need not wait for the next background refit.
    ASSIGN_OR_RETURN(auto sizes, GangSizesInUse(c));
    RETURN_IF_ERROR(RefitPoolTx(c, p, sizes).status());
    return GetAvailabilityTx(c, p);
  });
}

StatusOr<PoolAvailability> PgStore::GetAvailability(const std::string& pool) {
  return InTransaction<PoolAvailability>(pool_, [&](PgConn& c) -> StatusOr<PoolAvailability> {
    ASSIGN_OR_RETURN(auto p, FindPool(c, pool));
    return GetAvailabilityTx(c, p);
  });
}

StatusOr<std::vector<RefitResult>> PgStore::RefitAvailability() {
  struct Work {
    std::vector<PoolRow> pools;
    std::vector<int> gang_sizes;
  };
  ASSIGN_OR_RETURN(auto work, InTransaction<Work>(pool_, [](PgConn& c) -> StatusOr<Work> {
                     ASSIGN_OR_RETURN(auto r, c.Exec("availability_spot_pools",
                                                     "SELECT id, name FROM pools WHERE"
                                                     " capacity_kind = 'spot' ORDER BY id"));
                     Work w;
                     for (int i = 0; i < r.rows(); ++i)
                       w.pools.push_back({r.Int(i, 0), r.Text(i, 1), true});
                     ASSIGN_OR_RETURN(w.gang_sizes, GangSizesInUse(c));
                     return w;
                   }));
  std::vector<RefitResult> out;
  for (const auto& p : work.pools) {
    // One transaction per pool: a large pool does not hold the others' rows.
    ASSIGN_OR_RETURN(auto res, InTransaction<RefitResult>(pool_, [&](PgConn& c) {
                       return RefitPoolTx(c, p, work.gang_sizes);
                     }));
    out.push_back(std::move(res));
  }
  return out;
}

}  // namespace frugal::store
