// Checks run after every end-to-end test that disturbs the system (kills, preemptions):
// every listed job reached a terminal state, no job ever had two active attempts, no
// ended job still has an active attempt, each job's checkpoints only moved forward, and the
// cost ledger reconciles (every ended attempt billed exactly; teams = sum of jobs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace frugal::store {
class PgConn;
}

namespace frugal::testing {

// The ledger reconciliation query alone: one line per discrepancy, empty when it reconciles.
std::vector<std::string> CheckLedger(store::PgConn& conn);

// Empty when all hold; otherwise one line per violation. `conninfo` is the scheduler's
// database; `acknowledged` are the ids the API accepted.
std::vector<std::string> CheckInvariants(const std::string& conninfo,
                                         const std::vector<std::int64_t>& acknowledged);

}  // namespace frugal::testing
