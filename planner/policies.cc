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

const std::vector<Policy>& AllPolicies() {
  static const auto* all =
      new std::vector<Policy>{Policy::kIdeal,
                              Policy::kSlackSwap,
                              Policy::kSlackSwapProductionOrder,
                              Policy::kSlackSwapNoLinkBudget,
                              Policy::kSlackSwapBarriers,
                              Policy::kVdnn,
                              Policy::kSuperNeurons,
                              Policy::kSwapAdvisor,
                              Policy::kCheckpointing,
                              Policy::kGeneticSearch,
                              Policy::kOptimum};
  return *all;
}

const std::vector<Policy>& BaselinePolicies() {
  static const auto* baselines =
      new std::vector<Policy>{Policy::kVdnn, Policy::kSuperNeurons,
                              Policy::kSwapAdvisor, Policy::kCheckpointing};
  return *baselines;
}

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kIdeal:
      return "ideal";
    case Policy::kSlackSwap:
      return "slackswap";
    case Policy::kSlackSwapProductionOrder:
      return "slackswap-production-order";
    case Policy::kSlackSwapNoLinkBudget:
      return "slackswap-no-link-budget";
    case Policy::kSlackSwapBarriers:
      return "slackswap-barriers";
    case Policy::kVdnn:
      return "vdnn";
    case Policy::kSuperNeurons:
      return "superneurons";
    case Policy::kSwapAdvisor:
      return "swapadvisor";
    case Policy::kCheckpointing:
      return "checkpointing";
    case Policy::kGeneticSearch:
      return "genetic-search";
    case Policy::kOptimum:
      return "optimum";
  }
  return "";
}

absl::StatusOr<Policy> PolicyFromName(absl::string_view name) {
  std::vector<std::string> names;
  for (Policy p : AllPolicies()) {
    if (name == PolicyName(p)) return p;
    names.push_back(PolicyName(p));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown policy; valid: ", absl::StrJoin(names, ", ")));
}

absl::StatusOr<PlanningResult> RunPolicy(Policy policy, const Trace& trace,
                                         const Hardware& hardware,
                                         int64_t budget_bytes,
                                         const PolicyOptions& options) {
  PlannerOptions slackswap = options.slackswap;
  GeneticOptions swapadvisor = options.swapadvisor;
  GeneticOptions genetic_search = options.genetic_search;
  if (options.should_stop) {
    slackswap.should_stop = options.should_stop;
    swapadvisor.should_stop = options.should_stop;
    genetic_search.should_stop = options.should_stop;
  }
  // Times that would overflow the event model: refused once, for every
  // policy (INVALID_ARGUMENT).
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  switch (policy) {
    case Policy::kIdeal: {
      LowerBound bound;
      bound.iteration_ns = trace.ideal_ns;
      return Judge(trace, hardware, kUnlimitedBytes, IdealPlan(trace), false,
                   bound);
    }
    case Policy::kSlackSwap:
    case Policy::kSlackSwapProductionOrder:
    case Policy::kSlackSwapNoLinkBudget:
    case Policy::kSlackSwapBarriers:
      // The ablations' options come from one place (SlackSwapOptionsFor).
      return PlanSlackSwap(trace, hardware, budget_bytes,
                           *SlackSwapOptionsFor(policy, options));
    case Policy::kVdnn:
      return PlanVdnn(trace, hardware, budget_bytes, slackswap.should_stop);
    case Policy::kSuperNeurons:
      return PlanSuperNeurons(trace, hardware, budget_bytes,
                              slackswap.should_stop);
    case Policy::kSwapAdvisor:
      return PlanSwapAdvisor(trace, hardware, budget_bytes, swapadvisor);
    case Policy::kCheckpointing:
      return PlanCheckpointing(trace, hardware, budget_bytes,
                               slackswap.should_stop);
    case Policy::kGeneticSearch:
      return PlanGeneticSearch(trace, hardware, budget_bytes, genetic_search);
    case Policy::kOptimum: {
      OptimumOptions optimum = options.optimum;
      if (options.should_stop) optimum.should_stop = options.should_stop;
      return PlanOptimum(trace, hardware, budget_bytes, optimum);
    }
  }
  return absl::InternalError("unknown policy");
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
  PlanningResult result =
      Judge(trace, hardware, budget_bytes, IdealPlan(trace), false, bound);
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
  return PlanUnderAllocator(trace, hardware, budget_bytes, options.memory,
                            [&](int64_t budget) {
                              return RunWithinResidentBudget(
                                  policy, trace, hardware, budget, options);
                            });
}

std::optional<PlannerOptions> SlackSwapOptionsFor(
    Policy policy, const PolicyOptions& options) {
  PlannerOptions o = options.slackswap;
  if (options.should_stop) o.should_stop = options.should_stop;
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
