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
#include "absl/types/span.h"
#include "planner/allocator_budget.h"
#include "planner/genetic.h"
#include "planner/optimum.h"
#include "planner/slackswap.h"

namespace slackswap {

// The policies, in the order of their rows in PolicyTable().
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
  kOptimum,  // the exact optimum of a small trace (optimum.h)
};
// How many policies there are: PolicyTable()'s rows (checked where the
// table is defined), the length of arrays indexed by policy.
inline constexpr int kNumPolicies = 11;

struct PolicyOptions;

// One row per policy: everything the layers above derive from a policy.
// The proto value is named after `name` (POLICY_ and the name in upper case,
// '-' as '_': service/wire_convert.cc), the CLI's help lists the names and
// summaries, the service's cost estimate asks max_replays, and
// docs/planner.md's policy table lists the same rows (a test checks each).
struct PolicyInfo {
  Policy policy;
  // Stable, lower case: "slackswap", "genetic-search", ...
  const char* name;
  // What it is, in a few words (help texts, the docs' table).
  const char* summary;
  // One of the paper's four baselines.
  bool baseline;
  // Holds a population of plans while it searches (the memory estimate).
  bool population_search;
  // Plans (RunPolicy calls it after the checks every policy shares).
  absl::StatusOr<PlanningResult> (*run)(const Trace& trace,
                                        const Hardware& hardware,
                                        int64_t budget_bytes,
                                        const PolicyOptions& options);
  // The most replays of the trace it makes, the planners' passes counted as
  // one (the service's cost estimate).
  int64_t (*max_replays)(const Trace& trace, const PolicyOptions& options);
};

// Every policy's row, in the enum's order.
absl::Span<const PolicyInfo> PolicyTable();
const PolicyInfo& InfoOf(Policy policy);

// Stable lower-case names ("slackswap", "vdnn", "superneurons",
// "swapadvisor", "checkpointing", "genetic-search", "optimum", "ideal",
// "slackswap-production-order", "slackswap-no-link-budget",
// "slackswap-barriers").
const char* PolicyName(Policy policy);
absl::StatusOr<Policy> PolicyFromName(absl::string_view name);
const std::vector<Policy>& AllPolicies();
// The four baselines of the paper.
const std::vector<Policy>& BaselinePolicies();
// "  name  summary" lines, one per policy, for help texts.
std::string PolicyHelp();

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
  // The node's physics and the allocator (simulator/physics.h): RunPolicy
  // gives its node part to every planner's replays (the options above are
  // set from it); RunPolicyWithinBudget also judges the allocator. None by
  // default.
  Physics physics;
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
// and that options.physics's allocator applies (PlanUnderAllocator).
absl::StatusOr<PlanningResult> RunPolicyWithinBudget(
    Policy policy, const Trace& trace, const Hardware& hardware,
    int64_t budget_bytes, const PolicyOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_POLICIES_H_
