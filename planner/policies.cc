#include "planner/policies.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "planner/basic_plans.h"
#include "planner/checkpointing.h"
#include "planner/genetic_search.h"
#include "planner/judge.h"
#include "planner/superneurons.h"
#include "planner/swapadvisor.h"
#include "planner/vdnn.h"

namespace slackswap {

namespace {

// The runners: each policy's planner, with the options RunPolicy prepared.

absl::StatusOr<PlanningResult> RunIdeal(const Trace& trace,
                                        const Hardware& hardware, int64_t,
                                        const PolicyOptions& options) {
  LowerBound bound;
  bound.iteration_ns = trace.ideal_ns;
  return Judge(trace, hardware, kUnlimitedBytes, IdealPlan(trace), false,
               options.physics.NodeOnly(), bound);
}

template <Policy kPolicy>
absl::StatusOr<PlanningResult> RunSlackSwap(const Trace& trace,
                                            const Hardware& hardware,
                                            int64_t budget_bytes,
                                            const PolicyOptions& options) {
  // The ablations' options come from one place (SlackSwapOptionsFor).
  return PlanSlackSwap(trace, hardware, budget_bytes,
                       *SlackSwapOptionsFor(kPolicy, options));
}

absl::StatusOr<PlanningResult> RunVdnn(const Trace& trace,
                                       const Hardware& hardware,
                                       int64_t budget_bytes,
                                       const PolicyOptions& options) {
  return PlanVdnn(trace, hardware, budget_bytes, options.physics.NodeOnly(),
                  options.slackswap.should_stop);
}

absl::StatusOr<PlanningResult> RunSuperNeurons(const Trace& trace,
                                               const Hardware& hardware,
                                               int64_t budget_bytes,
                                               const PolicyOptions& options) {
  return PlanSuperNeurons(trace, hardware, budget_bytes,
                          options.physics.NodeOnly(),
                          options.slackswap.should_stop);
}

absl::StatusOr<PlanningResult> RunSwapAdvisor(const Trace& trace,
                                              const Hardware& hardware,
                                              int64_t budget_bytes,
                                              const PolicyOptions& options) {
  return PlanSwapAdvisor(trace, hardware, budget_bytes, options.swapadvisor);
}

absl::StatusOr<PlanningResult> RunCheckpointing(const Trace& trace,
                                                const Hardware& hardware,
                                                int64_t budget_bytes,
                                                const PolicyOptions& options) {
  return PlanCheckpointing(trace, hardware, budget_bytes,
                           options.physics.NodeOnly(),
                           options.slackswap.should_stop);
}

absl::StatusOr<PlanningResult> RunGeneticSearch(const Trace& trace,
                                                const Hardware& hardware,
                                                int64_t budget_bytes,
                                                const PolicyOptions& options) {
  return PlanGeneticSearch(trace, hardware, budget_bytes,
                           options.genetic_search);
}

absl::StatusOr<PlanningResult> RunOptimum(const Trace& trace,
                                          const Hardware& hardware,
                                          int64_t budget_bytes,
                                          const PolicyOptions& options) {
  return PlanOptimum(trace, hardware, budget_bytes, options.optimum);
}

// The most replays: the planners' passes count as one.

int64_t OneReplay(const Trace&, const PolicyOptions&) { return 1; }

int64_t TwoReplays(const Trace&, const PolicyOptions&) { return 2; }

int64_t SlackSwapReplays(const Trace& trace, const PolicyOptions& options) {
  return MaxSlackSwapReplays(trace, options.slackswap);
}

int64_t SwapAdvisorReplays(const Trace&, const PolicyOptions& options) {
  return options.swapadvisor.max_evaluations + 4;
}

int64_t GeneticSearchReplays(const Trace& trace, const PolicyOptions& options) {
  return options.genetic_search.max_evaluations +
         MaxSlackSwapReplays(trace, options.slackswap) + 2;
}

int64_t OptimumReplays(const Trace& trace, const PolicyOptions& options) {
  return options.optimum.max_replays +
         MaxSlackSwapReplays(trace, options.slackswap);
}

constexpr PolicyInfo kTable[] = {
    {Policy::kIdeal, "ideal",
     "every tensor kept, memory unlimited: the reference", false, false,
     RunIdeal, OneReplay},
    {Policy::kSlackSwap, "slackswap",
     "the link budget on the costliest recomputations, then the cheapest "
     "bytes recomputed, repaired in the event model",
     false, false, RunSlackSwap<Policy::kSlackSwap>, SlackSwapReplays},
    {Policy::kSlackSwapProductionOrder, "slackswap-production-order",
     "ablation: swaps ranked by production order", false, false,
     RunSlackSwap<Policy::kSlackSwapProductionOrder>, SlackSwapReplays},
    {Policy::kSlackSwapNoLinkBudget, "slackswap-no-link-budget",
     "ablation: no link budget pass (recompute only)", false, false,
     RunSlackSwap<Policy::kSlackSwapNoLinkBudget>, SlackSwapReplays},
    {Policy::kSlackSwapBarriers, "slackswap-barriers",
     "ablation: per-layer barriers in the replay", false, false,
     RunSlackSwap<Policy::kSlackSwapBarriers>, SlackSwapReplays},
    {Policy::kVdnn, "vdnn",
     "vDNN: swap in production order, layer by layer, with barriers", true,
     false, RunVdnn, TwoReplays},
    {Policy::kSuperNeurons, "superneurons",
     "SuperNeurons: recompute cheap ops' outputs, swap costly ones'", true,
     false, RunSuperNeurons, TwoReplays},
    {Policy::kSwapAdvisor, "swapadvisor",
     "SwapAdvisor: a genetic search over swaps", true, true, RunSwapAdvisor,
     SwapAdvisorReplays},
    {Policy::kCheckpointing, "checkpointing",
     "block checkpointing: keep the inputs of the fewest blocks that fit, "
     "rebuild their bodies",
     true, false, RunCheckpointing, TwoReplays},
    {Policy::kGeneticSearch, "genetic-search",
     "a genetic search over every decision, seeded with SlackSwap's plan",
     false, true, RunGeneticSearch, GeneticSearchReplays},
    {Policy::kOptimum, "optimum",
     "the exact optimum of a trace of at most 16 tensors", false, false,
     RunOptimum, OptimumReplays},
};

static_assert(sizeof(kTable) / sizeof(kTable[0]) == kNumPolicies,
              "one row per policy");

constexpr bool RowsInEnumOrder() {
  for (int i = 0; i < kNumPolicies; ++i) {
    if (static_cast<int>(kTable[i].policy) != i) return false;
  }
  return true;
}
static_assert(RowsInEnumOrder(), "PolicyTable's rows follow the enum");

}  // namespace

absl::Span<const PolicyInfo> PolicyTable() { return kTable; }

const PolicyInfo& InfoOf(Policy policy) {
  return kTable[static_cast<int>(policy)];
}

const std::vector<Policy>& AllPolicies() {
  static const auto* all = [] {
    auto* v = new std::vector<Policy>;
    for (const PolicyInfo& row : kTable) v->push_back(row.policy);
    return v;
  }();
  return *all;
}

const std::vector<Policy>& BaselinePolicies() {
  static const auto* baselines = [] {
    auto* v = new std::vector<Policy>;
    for (const PolicyInfo& row : kTable) {
      if (row.baseline) v->push_back(row.policy);
    }
    return v;
  }();
  return *baselines;
}

const char* PolicyName(Policy policy) { return InfoOf(policy).name; }

absl::StatusOr<Policy> PolicyFromName(absl::string_view name) {
  std::vector<std::string> names;
  for (const PolicyInfo& row : kTable) {
    if (name == row.name) return row.policy;
    names.push_back(row.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy; valid: ", absl::StrJoin(names, ", ")));
}

std::string PolicyHelp() {
  std::string help;
  for (const PolicyInfo& row : kTable) {
    absl::StrAppend(&help, "\n    ", row.name, ": ", row.summary);
  }
  return help;
}

absl::StatusOr<PlanningResult> RunPolicy(Policy policy, const Trace& trace,
                                         const Hardware& hardware,
                                         int64_t budget_bytes,
                                         const PolicyOptions& options) {
  // Times that would overflow the event model: refused once, for every
  // policy (INVALID_ARGUMENT).
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  // The node physics, and the caller's stop, go to every planner's options.
  PolicyOptions prepared = options;
  const Physics node = options.physics.NodeOnly();
  prepared.slackswap.physics = node;
  prepared.slackswap.earliest_issue =
      options.slackswap.earliest_issue && !options.physics.budget_reserved;
  prepared.swapadvisor.physics = node;
  prepared.genetic_search.physics = node;
  prepared.optimum.physics = node;
  if (options.should_stop) {
    prepared.slackswap.should_stop = options.should_stop;
    prepared.swapadvisor.should_stop = options.should_stop;
    prepared.genetic_search.should_stop = options.should_stop;
    prepared.optimum.should_stop = options.should_stop;
  }
  return InfoOf(policy).run(trace, hardware, budget_bytes, prepared);
}

namespace {

absl::StatusOr<PlanningResult> RunWithinResidentBudget(
    Policy policy, const Trace& trace, const Hardware& hardware,
    int64_t budget_bytes, const PolicyOptions& options) {
  if (policy != Policy::kIdeal)
    return RunPolicy(policy, trace, hardware, budget_bytes, options);
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  LowerBound bound = ComputeLowerBound(trace, hardware, budget_bytes);
  bound.iteration_ns = std::max(bound.iteration_ns, trace.ideal_ns);
  PlanningResult result = Judge(trace, hardware, budget_bytes, IdealPlan(trace),
                                false, options.physics.NodeOnly(), bound);
  if (!result.feasible) {
    result.reason = absl::StrCat(
        "the ideal policy keeps every tensor and needs ",
        AllKeepPeakBytes(trace), " bytes (the all-keep peak), above the ",
        "budget of ", budget_bytes, " bytes: ", result.reason);
  }
  return result;
}

}  // namespace

absl::StatusOr<PlanningResult> RunPolicyWithinBudget(
    Policy policy, const Trace& trace, const Hardware& hardware,
    int64_t budget_bytes, const PolicyOptions& options) {
  return PlanUnderAllocator(trace, hardware, budget_bytes, options.physics,
                            [&](int64_t budget) {
                              return RunWithinResidentBudget(
                                  policy, trace, hardware, budget, options);
                            });
}

std::optional<PlannerOptions> SlackSwapOptionsFor(
    Policy policy, const PolicyOptions& options) {
  PlannerOptions o = options.slackswap;
  if (options.should_stop) o.should_stop = options.should_stop;
  o.physics = options.physics.NodeOnly();
  o.earliest_issue =
      options.slackswap.earliest_issue && !options.physics.budget_reserved;
  switch (policy) {
    case Policy::kSlackSwap:
      return o;
    // The ablations measure the passes: no anytime search (it would find
    // the same plans whatever the ablation changed).
    case Policy::kSlackSwapProductionOrder:
      o.ranking = SwapRanking::kProductionOrder;
      o.search_time_ms = 0;
      return o;
    case Policy::kSlackSwapNoLinkBudget:
      o.link_budget_pass = false;
      o.search_time_ms = 0;
      return o;
    case Policy::kSlackSwapBarriers:
      o.per_layer_barriers = true;
      o.search_time_ms = 0;
      return o;
    default:
      return std::nullopt;
  }
}

}  // namespace slackswap
