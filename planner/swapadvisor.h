// File: swapadvisor.h
//
// SwapAdvisor (Huang et al., ASPLOS'20) as the SlackSwap paper describes it:
// swap only; a genetic algorithm chooses the swap set and the prefetch points
// that minimize the simulated iteration time under the memory budget. It has
// no notion of a link-time budget: link time is paid only as the simulator
// charges it. Seeded with the vDNN swap set, all-swap and all-keep.
#ifndef SLACKSWAP_PLANNER_SWAPADVISOR_H_
#define SLACKSWAP_PLANNER_SWAPADVISOR_H_

#include <cstdint>

#include "planner/genetic.h"
#include "planner/slackswap.h"

namespace slackswap {

// Replayed without barriers. Deterministic for options.seed.
// options.allow_recompute is ignored (always false).
// Stops between generations when options.should_stop says so (CANCELLED).
absl::StatusOr<PlanningResult> PlanSwapAdvisor(const Trace& trace,
                                               const Hardware& hardware,
                                               int64_t budget_bytes,
                                               GeneticOptions options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_SWAPADVISOR_H_
