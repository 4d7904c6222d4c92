#include "planner/optimality.h"

#include <algorithm>

#include "base/status_macros.h"
#include "simulator/event_model.h"
#include "simulator/trace_validation.h"

namespace slackswap {

absl::StatusOr<int64_t> OptimumMemoryFloor(const Trace& trace,
                                           const Hardware& hardware,
                                           const OptimumOptions& options) {
  int64_t lo = 0, hi = AllKeepPeakBytes(trace);  // lo fails or is 0, hi fits
  SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult at_zero,
                             PlanOptimum(trace, hardware, 0, options));
  if (at_zero.feasible) return 0;
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult r,
                               PlanOptimum(trace, hardware, mid, options));
    if (r.feasible) {
      // The plan found holds no more than its peak: it fits there too.
      hi = std::min(mid, r.replay.peak_resident_bytes);
    } else {
      lo = mid;
    }
  }
  return hi;
}

absl::StatusOr<OptimalityStudy> RunOptimalityStudy(
    uint64_t first_seed, int traces, const std::vector<Policy>& policies,
    const PolicyOptions& options, const SmallTraceOptions& shape) {
  OptimalityStudy study;
  study.policies = policies;
  for (uint64_t seed = first_seed; seed < first_seed + traces; ++seed) {
    const SmallTrace small = RandomSmallTrace(seed, shape);
    SLACKSWAP_ASSIGN_OR_RETURN(Trace trace, ValidateTrace(small.trace));
    if (!CheckTimeRange(trace, small.hardware).ok()) continue;
    const int64_t peak = AllKeepPeakBytes(trace);
    SLACKSWAP_ASSIGN_OR_RETURN(
        int64_t floor,
        OptimumMemoryFloor(trace, small.hardware, options.optimum));
    const std::pair<const char*, int64_t> levels[] = {
        {"floor-1", floor - 1},
        {"floor", floor},
        {"25%", floor + (peak - floor) / 4},
        {"60%", floor + (peak - floor) * 3 / 5},
        {"peak", peak}};
    for (const auto& [label, budget] : levels) {
      if (budget < 0) continue;
      OptimalityCase c;
      c.seed = seed;
      c.label = label;
      c.budget_bytes = budget;
      c.floor_bytes = floor;
      c.peak_bytes = peak;
      SLACKSWAP_ASSIGN_OR_RETURN(
          c.optimum,
          PlanOptimum(trace, small.hardware, budget, options.optimum));
      for (Policy p : policies) {
        SLACKSWAP_ASSIGN_OR_RETURN(
            PlanningResult r,
            RunPolicyWithinBudget(p, trace, small.hardware, budget, options));
        c.plans.push_back(std::move(r));
      }
      study.cases.push_back(std::move(c));
    }
  }
  return study;
}

}  // namespace slackswap
