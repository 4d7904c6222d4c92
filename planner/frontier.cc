#include "planner/frontier.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "planner/lower_bound.h"
#include "simulator/event_model.h"

namespace slackswap {

absl::StatusOr<int64_t> SmallestPlannedBudget(
    int64_t lo, int64_t hi, int64_t precision,
    const std::function<absl::StatusOr<bool>(int64_t)>& planned) {
  precision = std::max<int64_t>(1, precision);
  if (lo >= hi) return hi;
  SLACKSWAP_ASSIGN_OR_RETURN(bool at_lo, planned(lo));
  if (at_lo) return lo;
  while (hi - lo > precision) {
    const int64_t mid = lo + (hi - lo) / 2;
    SLACKSWAP_ASSIGN_OR_RETURN(bool at_mid, planned(mid));
    if (at_mid) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return hi;
}

absl::Status ExplainInfeasible(const Trace& trace, const Hardware& hardware,
                               const PlannerOptions& options,
                               PlanningResult& result) {
  const ProvenFloor floor = ComputeProvenFloor(trace);
  result.proven_floor_bytes = floor.bytes;
  const int64_t peak = AllKeepPeakBytes(trace);
  PlannerOptions quiet = options;
  quiet.linear_program_bound = false;
  SLACKSWAP_ASSIGN_OR_RETURN(
      const int64_t smallest,
      SmallestPlannedBudget(
          std::max(floor.bytes, result.replay.budget_bytes + 1),
          std::max(peak, floor.bytes), peak / 10000,
          [&](int64_t budget) -> absl::StatusOr<bool> {
            SLACKSWAP_ASSIGN_OR_RETURN(
                PlanningResult r,
                PlanSlackSwap(trace, hardware, budget, quiet));
            return r.feasible;
          }));
  result.smallest_planned_budget_bytes = smallest;
  absl::StrAppend(&result.reason, "; no plan fits below ", floor.bytes,
                  " bytes (op ", floor.op, " must hold that much), and ",
                  "SlackSwap plans from ", smallest, " bytes");
  return absl::OkStatus();
}

}  // namespace slackswap
