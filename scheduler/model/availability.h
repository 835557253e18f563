// A spot pool's availability as a semi-Markov chain (issue 14, decisions 0017 and 0023).
//
// Spot capacity alternates between up spells (the pool has capacity) and down spells (it has
// none). How likely a spell is to end in the next tick may depend on how long it has lasted,
// so the chain's state is (up or down, the spell's age in geometric bins): the first bins are
// one tick wide, later ones wider (1, 2, 3, 4, 7, 10, 17, 27, ... ticks), the last one holds
// every older age. With one bin per side it is the two-state chain of a constant reclaim
// rate and mean outage.
//
// The model is a table of counts per (side, bin): ticks that stayed in the bin, ticks that
// moved on to the next bin, and ticks that ended the spell. Counts add, so the model is
// learned incrementally from whatever the store observes (node lives, reclaims, notices,
// capacity errors) or from an imported series, and refitting is a sum. Probabilities are the
// counts plus a prior (pseudo-counts from the admin's expected reclaim rate and outage), so
// a pool with little history starts from what the admin said and moves as it is observed.
//
// Thread-safety: a value type; const methods are safe to call concurrently.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::model {

struct AvailabilityModel {
  // One tick of the chain, in seconds. Spells are measured in ticks (rounded).
  std::int64_t tick_seconds = 180;
  // First age (ticks) of each bin, per side; bin_start[0] == 0.
  std::vector<int> bin_start;
  // Counts per state (index State(up, age)): stayed in the bin, moved on to the next bin,
  // ended the spell. Double so a prior and fractional evidence can be mixed in.
  std::vector<double> stay, onward, flip;

  // An empty model (no evidence) with `bins` bins per side.
  static AvailabilityModel Empty(std::int64_t tick_seconds, int bins);

  int bins() const { return static_cast<int>(bin_start.size()); }
  int states() const { return 2 * bins(); }
  // Up states come first: [0, bins) up, [bins, 2 bins) down.
  int State(bool up, int age_ticks) const;
  bool IsUp(int state) const { return state < bins(); }

  // Adds one spell of `ticks` ticks on side `up`. `ended`: the spell is over (the other
  // side followed); false for the spell still going on (censored: no end is counted).
  void AddSpell(bool up, std::int64_t ticks, bool ended);
  // Adds a series of consecutive ticks (1 = up), as spells; the last spell is censored.
  void AddSeries(const std::vector<std::uint8_t>& up);
  // Ticks of evidence (the prior excluded).
  double ObservedTicks() const;

  // The chain's transitions, each state's probabilities summing to 1: the counts plus a
  // prior worth `prior_ticks` ticks in all (an equal share per state) in which an up spell ends with probability
  // `up_end` per tick and a down spell with `down_end` per tick (memoryless).
  struct Next {
    int state;
    double p;
  };
  std::vector<std::vector<Next>> Transitions(double prior_ticks, double up_end,
                                             double down_end) const;
};

// The prior's per-tick hazards from the admin's expected reclaims per node-hour and outage
// hours, and how many ticks of evidence the prior is worth (kAvailabilityPriorHours).
inline constexpr double kAvailabilityPriorHours = 10.0;
struct AvailabilityPrior {
  double prior_ticks = 0;
  double up_end = 0;
  double down_end = 0;
};
AvailabilityPrior PriorFor(std::int64_t tick_seconds, double reclaims_per_hour,
                           double outage_hours);

// Where a pool's availability stands now: up or down, and for how long.
// `assumed`: no evidence either way (no node yet, or the last one released, and no
// stockout since): taken as a fresh up spell, since asking is how a pool shows it has
// capacity; a stockout or a reclaim turns it down.
struct AvailabilityNow {
  bool up = true;
  std::int64_t spell_seconds = 0;
  bool assumed = false;
};

// JSON text of the counts (for the store) and back; Parse fails on a malformed text.
std::string AvailabilityToJson(const AvailabilityModel& m);
bool AvailabilityFromJson(const std::string& text, AvailabilityModel* out);

}  // namespace frugal::model
