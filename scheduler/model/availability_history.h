// Where a spot pool's availability counts come from (issue 14, decision 0023): spells of
// up and down time, derived from the node lives the store observes or from an imported
// series in the shared traces' CSV format, and added to an AvailabilityModel in its ticks.
// Pure functions: no clock, no I/O; times are seconds (any epoch, the same for all inputs).
//
// Thread-safety: free functions on values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "scheduler/model/availability.h"

namespace frugal::model {

// The store's chain: 180 s ticks (the simulator's grid and decision 0017's, so a model
// fitted here means what the reference's did; probes in the shared traces come every
// 30-600 s) and 8 geometric age bins (3 minutes to about 2 hours and beyond; decision
// 0017 measured 8 bins as good as 12 and better than 1).
inline constexpr std::int64_t kAvailabilityTickSeconds = 180;
inline constexpr int kAvailabilityBins = 8;

// One stretch of time a pool was up (had capacity) or down. `ended`: the other side
// followed; false for the spell still going on and for one cut by a gap in the evidence.
struct Spell {
  bool up = false;
  double start_s = 0;
  double end_s = 0;
  bool ended = false;
};

// One node's life: from registration to its last sign of life (its reclaim notice, its
// last heartbeat), or to now while it is live. `released`: Frugal ended it on purpose (an
// idle instance destroyed, a node drained), so its end says nothing of the capacity.
struct NodeLife {
  double start_s = 0;
  double end_s = 0;
  bool released = false;
};

// A pool is up while at least one node is alive: the up spells are the components of the
// union of lives, from the first life's start to `now_s`. What follows a component
// depends on how it ended (by the life that ends last in it):
// - taken (a reclaim, a lost node): the pool is down from its end until the next life
//   starts (or now), and the up spell ended;
// - released: nobody asked for capacity, so the gap is no evidence either way. The up
//   spell is cut (not ended) and the gap is not counted, unless a stockout (a `create`
//   refused for want of capacity, `stockouts_s`) falls in it: then the pool is down from
//   the first such stockout until the next life (or now).
// Stockouts before the first life (a pool that never got a node) make it down from the
// first one; stockouts while a node is alive are not counted (the pool still serves).
// The last spell is not ended. Empty when there are no lives and no stockouts. Inputs
// need not be sorted.
//
// With `need` > 1, the same for a gang of that many nodes (decision 0032): the pool is up
// while at least `need` lives overlap ("all N up", as experiment 3 counts a series of N
// instances), a drop below `need` ends or cuts the spell by the same rule, and stockouts
// count while fewer than `need` are alive.
std::vector<Spell> SpellsFromLives(std::vector<NodeLife> lives, double now_s,
                                   std::vector<double> stockouts_s = {}, int need = 1);

// Adds `spells` to `m` in m's ticks. Boundaries are rounded to the tick grid from the
// start of each unbroken run of spells (so the ticks add up to the run's duration); a
// spell that rounds to no tick disappears and its neighbours of the same side merge.
void AddSpells(const std::vector<Spell>& spells, AvailabilityModel& m);

// An availability series: sample times (seconds, increasing) and 1 = up.
struct AvailabilitySeries {
  std::vector<double> t_s;
  std::vector<std::uint8_t> up;
  double step_s = 0;  // the median gap between samples
};

// A gap between samples longer than this many steps cuts the series: the spell before it
// is not ended (the probes stopped, not the capacity) and a new run starts after it.
inline constexpr double kMaxGapSteps = 5;

// Parses the shared traces' CSV (one header line; see /work/shared/traces/README.md):
// the time is the `elapsed_s` column, else `timestamp_utc` (RFC 3339, UTC); the
// availability is `column`, else `available`, else the only column that is not a zone,
// tick, time or price; a value above 0 is up (a count of instances counts as up while one
// can be had). With a `zone` column the rows of `zone` are taken (empty: there must be only
// one zone). InvalidArgument naming the line, column or zone to fix; fewer than 2 rows is
// an error (the step is unknown).
StatusOr<AvailabilitySeries> ParseAvailabilityCsv(const std::string& text,
                                                  const std::string& zone,
                                                  const std::string& column);

// The spells of a series: each sample lasts until the next (the last one a step).
std::vector<Spell> SpellsFromSeries(const AvailabilitySeries& s);

// The series as a small CSV of the same format ("elapsed_s,available", seconds from the
// first sample): what the CLI sends after picking the zone and column locally.
std::string SeriesToCsv(const AvailabilitySeries& s);

}  // namespace frugal::model
