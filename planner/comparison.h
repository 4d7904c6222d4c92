// File: comparison.h
//
// One workload, several budgets and policies, one table: what `slackswap
// compare` prints and the service's Compare returns.
#ifndef SLACKSWAP_PLANNER_COMPARISON_H_
#define SLACKSWAP_PLANNER_COMPARISON_H_

#include <cstdint>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/policies.h"
#include "slackswap/v1/planning.pb.h"

namespace slackswap {

// Runs every policy at every budget (bytes), budgets outermost. Each entry's
// report leaves out the plan. `should_stop` is checked before each run
// (CANCELLED when it returns true).
absl::StatusOr<v1::Comparison> Compare(
    const Trace& trace, const Hardware& hardware,
    const std::vector<int64_t>& budgets_bytes,
    const std::vector<Policy>& policies, const PolicyOptions& options,
    const std::function<bool()>& should_stop = nullptr);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_COMPARISON_H_
