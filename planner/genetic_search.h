// File: genetic_search.h
//
// The optimality check: a genetic search over keep / swap / recompute plans
// and prefetch points, seeded with the SlackSwap plan, all-keep, all-swap and
// random plans, reporting the best plan it finds and how many candidate plans
// it replayed (10,000 by default). It is never worse than SlackSwap's plan.
#ifndef SLACKSWAP_PLANNER_GENETIC_SEARCH_H_
#define SLACKSWAP_PLANNER_GENETIC_SEARCH_H_

#include <cstdint>

#include "planner/genetic.h"
#include "planner/slackswap.h"

namespace slackswap {

// Replayed without barriers. Deterministic for options.seed.
absl::StatusOr<PlanningResult> PlanGeneticSearch(const Trace& trace,
                                                 const Hardware& hardware,
                                                 int64_t budget_bytes,
                                                 GeneticOptions options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_GENETIC_SEARCH_H_
