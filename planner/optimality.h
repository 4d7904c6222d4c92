// File: optimality.h
//
// SlackSwap, the baselines and the lower bound against the exact optimum on
// random small traces (simulator/small_traces.h): the study behind the
// optimality table of docs/results.md and the property tests.
//
// For each trace it finds the memory floor (the smallest budget at which the
// optimum finds a plan, by bisection), then plans at budgets from the floor
// to the all-keep peak, and one byte below the floor.
#ifndef SLACKSWAP_PLANNER_OPTIMALITY_H_
#define SLACKSWAP_PLANNER_OPTIMALITY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/policies.h"
#include "simulator/small_traces.h"
#include "simulator/trace.h"

namespace slackswap {

// The smallest budget at which PlanOptimum finds a plan: bisection between 0
// and the all-keep peak (which the all-keep plan meets).
absl::StatusOr<int64_t> OptimumMemoryFloor(const Trace& trace,
                                           const Hardware& hardware,
                                           const OptimumOptions& options);

struct OptimalityCase {
  uint64_t seed = 0;
  std::string label;  // "floor-1", "floor", "25%", "60%", "peak"
  int64_t budget_bytes = 0;
  int64_t floor_bytes = 0;
  int64_t peak_bytes = 0;
  PlanningResult optimum;
  // One per policy asked for, in that order.
  std::vector<PlanningResult> plans;
};

struct OptimalityStudy {
  std::vector<Policy> policies;
  std::vector<OptimalityCase> cases;
};

// Seeds [first_seed, first_seed + traces): every budget level of every trace.
absl::StatusOr<OptimalityStudy> RunOptimalityStudy(
    uint64_t first_seed, int traces, const std::vector<Policy>& policies,
    const PolicyOptions& options, const SmallTraceOptions& shape = {});

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_OPTIMALITY_H_
