// File: policies.h
//
// Every planning policy behind one call, for comparisons: the Ideal reference
// (all keep, unlimited memory), SlackSwap and its three ablations, the four
// baselines, and the genetic search.
#ifndef SLACKSWAP_PLANNER_POLICIES_H_
#define SLACKSWAP_PLANNER_POLICIES_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "planner/allocator_budget.h"
#include "planner/genetic.h"
#include "planner/optimum.h"
#include "planner/slackswap.h"

namespace slackswap {

enum class Policy {
  kIdeal,
  kSlackSwap,
  kSlackSwapProductionOrder,  // ablation: rank swaps by production order
  kSlackSwapNoLinkBudget,     // ablation: recompute only
  kSlackSwapBarriers,         // ablation: per-layer barriers
  kVdnn,
  kSuperNeurons,
  kSwapAdvisor,
  kCheckpointing,
  kGeneticSearch,
  kOptimum,  // the exact optimum of a small trace (optimum.h); keep last
};
// How many policies there are (arrays indexed by policy are this long).
inline constexpr int kNumPolicies = static_cast<int>(Policy::kOptimum) + 1;

// Stable lower-case names ("slackswap", "vdnn", "superneurons",
// "swapadvisor", "checkpointing", "genetic-search", "optimum", "ideal",
// "slackswap-production-order", "slackswap-no-link-budget",
// "slackswap-barriers").
const char* PolicyName(Policy policy);
absl::StatusOr<Policy> PolicyFromName(absl::string_view name);
const std::vector<Policy>& AllPolicies();
// The four baselines of the paper.
const std::vector<Policy>& BaselinePolicies();

struct PolicyOptions {
  PlannerOptions slackswap;
  // SwapAdvisor's search: smaller than the optimality check's by default.
  GeneticOptions swapadvisor = [] {
    GeneticOptions o;
    o.max_evaluations = 4000;
    return o;
  }();
  GeneticOptions genetic_search;
  OptimumOptions optimum;
  // The caching allocator model (allocator_budget.h), for
  // RunPolicyWithinBudget: kNone by default.
  MemoryModel memory;
  // When set, asked inside every policy's work (in place of the stop
  // functions of the options above): a stopped policy returns CANCELLED.
  StopFunction should_stop;
};

// Runs `policy`. The Ideal policy ignores the budget (memory unlimited): it
// is the reference row of a comparison. The result's replay used
// result.per_layer_barriers.
absl::StatusOr<PlanningResult> RunPolicy(Policy policy, const Trace& trace,
                                         const Hardware& hardware,
                                         int64_t budget_bytes,
                                         const PolicyOptions& options);

// The SlackSwap planner's options for one of the SlackSwap policies (the
// ablations change one); nullopt for every other policy.
std::optional<PlannerOptions> SlackSwapOptionsFor(Policy policy,
                                                  const PolicyOptions& options);

// Runs `policy` for a plan the caller will execute within `budget_bytes`: as
// RunPolicy, except that Ideal's all-keep plan is judged at the budget, so it
// is feasible only if it fits (a plan is never feasible above its budget),
// and that options.memory applies (PlanUnderAllocator).
absl::StatusOr<PlanningResult> RunPolicyWithinBudget(
    Policy policy, const Trace& trace, const Hardware& hardware,
    int64_t budget_bytes, const PolicyOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_POLICIES_H_
