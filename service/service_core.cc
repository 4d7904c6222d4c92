#include "service/service_core.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "base/field_violations.h"
#include "base/saturating.h"
#include "base/status_macros.h"
#include "base/stop.h"
#include "planner/allocator_budget.h"
#include "planner/frontier.h"
#include "planner/lower_bound.h"
#include "planner/node_planner.h"
#include "service/trace_convert.h"
#include "service/wire_convert.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/speed_scaling.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

// A feasible result's replays at the robustness scalings (speed_scaling.h),
// under the options its own replay had.
void AddScaledReplays(const Trace& trace, const Hardware& hardware,
                      int64_t budget, const Physics& physics,
                      PlanningResult& result) {
  if (!result.feasible) return;
  result.replay.scaled = ReplayAtScalings(
      trace, hardware, result.plan, DeriveSchedule(trace, result.plan),
      AllocatorReplayOptions(budget, physics, result.per_layer_barriers));
}

absl::Status Stopped() {
  return absl::CancelledError("the call was cancelled or timed out");
}

// A request's trace and hardware in compact form. The trace is the caller's
// when it decoded it already, else converted here.
struct Inputs {
  const Trace& trace() const { return decoded != nullptr ? *decoded : owned; }

  const Trace* decoded = nullptr;
  Trace owned;
  Hardware hardware;
  Physics physics;  // the node's switches and the allocator
};

absl::Status Convert(const v1::Trace& trace, const Trace* decoded,
                     const v1::Hardware& hardware, const v1::Physics& physics,
                     Inputs& in) {
  if (decoded != nullptr) {
    in.decoded = decoded;
  } else {
    SLACKSWAP_ASSIGN_OR_RETURN(in.owned, TraceFromProto(trace));
  }
  SLACKSWAP_ASSIGN_OR_RETURN(in.hardware, HardwareFromProto(hardware));
  SLACKSWAP_ASSIGN_OR_RETURN(in.physics, PhysicsFromProto(physics));
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(in.trace(), in.hardware));
  return CheckPhysics(in.trace(), in.hardware, in.physics);
}

absl::StatusOr<PolicyOptions> OptionsFrom(const v1::PlannerOptions& proto,
                                          const Physics& physics,
                                          const StopFunction& should_stop) {
  PolicyOptions options;
  SLACKSWAP_ASSIGN_OR_RETURN(options.slackswap, PlannerOptionsFromProto(proto));
  options.physics = physics;
  options.should_stop = should_stop;
  return options;
}

// A node request's own fields (not its traces, budgets or policies): the
// jobs' GPUs summed, or INVALID_ARGUMENT naming each field that is off.
absl::StatusOr<int64_t> CheckNodeFields(const v1::PlanNodeRequest& request) {
  FieldViolations v;
  if (request.jobs_size() == 0 || request.jobs_size() > kMaxNodeJobs) {
    v.Add("jobs", absl::StrCat("must hold 1 to ", kMaxNodeJobs, " jobs"));
  }
  if (request.steps() != 0 && (request.steps() < 2 || request.steps() > 32)) {
    v.Add("steps", "must be in [2, 32] (0: 4)");
  }
  int64_t gpus = 0;
  for (int i = 0; i < request.jobs_size(); ++i) {
    const int32_t g = request.jobs(i).gpus();
    if (g < 0 || g > kMaxNodeGpus) {
      v.Add(absl::StrCat("jobs[", i, "].gpus"),
            absl::StrCat("must be in [1, ", kMaxNodeGpus, "] (0: 1)"));
    }
    gpus += std::max(g, 1);
    if (request.jobs(i).name().size() > 256)
      v.Add(absl::StrCat("jobs[", i, "].name"), "longer than 256 bytes");
  }
  if (gpus > kMaxNodeGpus) {
    v.Add("jobs", absl::StrCat("the jobs' GPUs sum to ", gpus, ", above ",
                               kMaxNodeGpus));
  }
  if (request.physics().rank_skew_ns() != 0)
    v.Add("physics.rank_skew_ns", "not used on a node: must be 0");
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  return gpus;
}

// Each job's report in a node's response, in job order.
void AddNodeJobReports(const v1::PlanNodeRequest& request, const NodePlan& plan,
                       const std::function<const Trace&(int)>& trace_of,
                       v1::PlanNodeResponse& response) {
  response.set_candidates(plan.candidates);
  for (size_t j = 0; j < plan.jobs.size(); ++j) {
    const NodePlanJobResult& r = plan.jobs[j];
    v1::NodeJobReport* out = response.add_jobs();
    out->set_name(request.jobs(static_cast<int>(j)).name());
    *out->mutable_report() =
        PlanningReportToProto(trace_of(static_cast<int>(j)), r.planned);
    out->set_uplink_share(r.uplink_share);
    out->set_alone_step_ns(r.alone_step_ns);
    out->set_shared_step_ns(r.shared_step_ns);
    out->set_slowdown(r.slowdown);
    out->set_slowdown_caused(r.slowdown_caused);
    out->set_outcome(
        r.feasible
            ? v1::PLAN_OUTCOME_PLANNED
            : PlanOutcomeToProto(r.planned.Outcome() == PlanOutcome::kPlanned
                                     ? PlanOutcome::kNoPlanFound
                                     : r.planned.Outcome()));
    out->set_reason(r.reason);
  }
}

}  // namespace

absl::StatusOr<PlanningResult> ServiceCore::RunObserved(
    Method call, Policy policy, const Trace& trace, const Hardware& hardware,
    int64_t budget, const PolicyOptions& options) const {
  const absl::Time start = absl::Now();
  SLACKSWAP_ASSIGN_OR_RETURN(
      PlanningResult result,
      RunPolicyWithinBudget(policy, trace, hardware, budget, options));
  if (call != Method::kFrontier)
    AddScaledReplays(trace, hardware, budget, options.physics, result);
  // The service's promise: a plan it calls feasible replays within its
  // budget. A policy that broke it is a bug, never an answer.
  const int64_t held = options.physics.budget_reserved
                           ? result.replay.peak_reserved_bytes
                           : result.replay.peak_resident_bytes;
  if (result.feasible && held > budget) {
    return absl::InternalError(absl::StrCat(
        "policy ", PolicyName(policy), " made a plan that holds ", held,
        " bytes, above the budget of ", budget, "; please report it"));
  }
  if (observer_ != nullptr)
    observer_->Planned(call, policy, result, absl::Now() - start);
  return result;
}

absl::StatusOr<v1::PlanResponse> ServiceCore::Plan(
    const v1::PlanRequest& request, const StopFunction& should_stop) const {
  return RunPlan(request, nullptr, should_stop);
}

absl::StatusOr<v1::PlanResponse> ServiceCore::Plan(
    const Decoded<v1::PlanRequest>& request,
    const StopFunction& should_stop) const {
  if (request.trace == nullptr)
    return absl::InternalError("Plan: a decoded trace expected");
  return RunPlan(request.message, request.trace, should_stop);
}

absl::StatusOr<v1::PlanResponse> ServiceCore::RunPlan(
    const v1::PlanRequest& request, const Trace* decoded_trace,
    const StopFunction& should_stop) const {
  ScopedStop scope(&should_stop);
  Inputs in;
  SLACKSWAP_RETURN_IF_ERROR(Convert(request.trace(), decoded_trace,
                                    request.hardware(), request.physics(), in));
  SLACKSWAP_ASSIGN_OR_RETURN(int64_t budget,
                             ResolveBudget(in.trace(), request.budget()));
  SLACKSWAP_ASSIGN_OR_RETURN(
      PolicyOptions options,
      OptionsFrom(request.options(), in.physics, should_stop));
  Policy policy = Policy::kSlackSwap;
  if (request.policy() != v1::POLICY_UNSPECIFIED) {
    SLACKSWAP_ASSIGN_OR_RETURN(policy,
                               PolicyFromProto(request.policy(), "policy"));
  }
  // An infeasible SlackSwap answer also searches for the smallest budget it
  // meets: about 15 more plans.
  const std::optional<PlannerOptions> slackswap =
      SlackSwapOptionsFor(policy, options);
  SLACKSWAP_RETURN_IF_ERROR(CheckCost(in.trace(), in.hardware, {policy},
                                      slackswap.has_value() ? 17 : 1, options,
                                      CostContext()));
  if (should_stop && should_stop()) return Stopped();
  const absl::Time start = absl::Now();
  SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult result,
                             RunObserved(Method::kPlan, policy, in.trace(),
                                         in.hardware, budget, options));
  result.proven_floor_bytes = ComputeProvenFloor(in.trace()).bytes;
  // (The search is for resident budgets: not under a reserved one.)
  if (!result.feasible && slackswap.has_value() &&
      !options.physics.budget_reserved) {
    SLACKSWAP_RETURN_IF_ERROR(
        ExplainInfeasible(in.trace(), in.hardware, *slackswap, result));
  }
  if (should_stop && should_stop()) return Stopped();
  v1::PlanResponse response;
  *response.mutable_report() = PlanningReportToProto(in.trace(), result);
  response.set_planning_time_ns(absl::ToInt64Nanoseconds(absl::Now() - start));
  return response;
}

absl::StatusOr<v1::SimulateResponse> ServiceCore::Simulate(
    const v1::SimulateRequest& request, const StopFunction& should_stop) const {
  return RunSimulate(request, nullptr, should_stop);
}

absl::StatusOr<v1::SimulateResponse> ServiceCore::Simulate(
    const Decoded<v1::SimulateRequest>& request,
    const StopFunction& should_stop) const {
  if (request.trace == nullptr)
    return absl::InternalError("Simulate: a decoded trace expected");
  return RunSimulate(request.message, request.trace, should_stop);
}

absl::StatusOr<v1::SimulateResponse> ServiceCore::RunSimulate(
    const v1::SimulateRequest& request, const Trace* decoded_trace,
    const StopFunction& should_stop) const {
  ScopedStop scope(&should_stop);
  Inputs in;
  SLACKSWAP_RETURN_IF_ERROR(Convert(request.trace(), decoded_trace,
                                    request.hardware(), request.physics(), in));
  SLACKSWAP_ASSIGN_OR_RETURN(int64_t budget,
                             ResolveBudget(in.trace(), request.budget()));
  SLACKSWAP_ASSIGN_OR_RETURN(slackswap::Plan plan,
                             PlanFromProto(in.trace(), request.plan()));
  // The replay, then one at each robustness scaling.
  PolicyOptions replayed;
  replayed.physics = in.physics;
  CostContext context;
  context.timeline = request.include_timeline();
  SLACKSWAP_RETURN_IF_ERROR(
      CheckCost(in.trace(), in.hardware, {Policy::kIdeal},
                1 + static_cast<int64_t>(RobustnessScalings().size()), replayed,
                context));
  SimulationOptions options =
      AllocatorReplayOptions(budget, in.physics, request.per_layer_barriers());
  options.record_timeline = request.include_timeline();
  SLACKSWAP_ASSIGN_OR_RETURN(
      SimulationResult result,
      slackswap::Simulate(in.trace(), in.hardware, plan, options));
  if (result.feasible) {
    result.scaled = ReplayAtScalings(in.trace(), in.hardware, plan,
                                     DeriveSchedule(in.trace(), plan), options);
  }
  if (result.stopped || (should_stop && should_stop())) return Stopped();
  v1::SimulateResponse response;
  *response.mutable_metrics() = MetricsToProto(result);
  *response.mutable_plan() =
      PlanToProto(plan, DeriveSchedule(in.trace(), plan));
  if (request.include_timeline())
    *response.mutable_timeline() = TimelineToProto(result);
  return response;
}

absl::StatusOr<v1::CompareResponse> ServiceCore::Compare(
    const v1::CompareRequest& request, const StopFunction& should_stop) const {
  return RunCompare(request, nullptr, should_stop);
}

absl::StatusOr<v1::CompareResponse> ServiceCore::Compare(
    const Decoded<v1::CompareRequest>& request,
    const StopFunction& should_stop) const {
  if (request.trace == nullptr)
    return absl::InternalError("Compare: a decoded trace expected");
  return RunCompare(request.message, request.trace, should_stop);
}

absl::StatusOr<v1::CompareResponse> ServiceCore::RunCompare(
    const v1::CompareRequest& request, const Trace* decoded_trace,
    const StopFunction& should_stop) const {
  ScopedStop scope(&should_stop);
  Inputs in;
  SLACKSWAP_RETURN_IF_ERROR(Convert(request.trace(), decoded_trace,
                                    request.hardware(), request.physics(), in));
  FieldViolations v;
  if (request.budgets_size() == 0 || request.budgets_size() > kMaxBudgets) {
    v.Add("budgets", absl::StrCat("must hold 1 to ", kMaxBudgets, " budgets"));
  }
  if (request.policies_size() == 0 || request.policies_size() > kMaxPolicies) {
    v.Add("policies",
          absl::StrCat("must hold 1 to ", kMaxPolicies, " policies"));
  }
  if (request.has_genetic_search_evaluations() &&
      (request.genetic_search_evaluations() < 100 ||
       request.genetic_search_evaluations() > 100000)) {
    v.Add("genetic_search_evaluations", "must be in [100, 100000]");
  }
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  std::vector<int64_t> budgets;
  for (int i = 0; i < request.budgets_size(); ++i) {
    absl::StatusOr<int64_t> budget =
        ResolveBudget(in.trace(), request.budgets(i));
    if (!budget.ok()) {
      return RenameField(budget.status(), "budget",
                         absl::StrCat("budgets[", i, "]"));
    }
    budgets.push_back(*budget);
  }
  std::vector<Policy> policies;
  for (int i = 0; i < request.policies_size(); ++i) {
    SLACKSWAP_ASSIGN_OR_RETURN(
        Policy p, PolicyFromProto(request.policies(i),
                                  absl::StrCat("policies[", i, "]")));
    policies.push_back(p);
  }
  SLACKSWAP_ASSIGN_OR_RETURN(
      PolicyOptions options,
      OptionsFrom(request.options(), in.physics, should_stop));
  if (request.has_genetic_search_evaluations()) {
    options.genetic_search.max_evaluations =
        request.genetic_search_evaluations();
  }
  CostContext context;
  context.work_field = "budgets";
  SLACKSWAP_RETURN_IF_ERROR(CheckCost(in.trace(), in.hardware, policies,
                                      static_cast<int64_t>(budgets.size()),
                                      options, context));
  // Every policy at every budget, budgets outermost; each entry's report
  // leaves out the plan.
  v1::CompareResponse response;
  v1::Comparison& comparison = *response.mutable_comparison();
  const int64_t peak = AllKeepPeakBytes(in.trace());
  comparison.set_all_keep_peak_bytes(peak);
  comparison.set_ideal_ns(in.trace().ideal_ns);
  for (int64_t budget : budgets) {
    for (Policy policy : policies) {
      if (should_stop && should_stop())
        return absl::CancelledError("comparison stopped");
      const absl::Time start = absl::Now();
      SLACKSWAP_ASSIGN_OR_RETURN(
          PlanningResult result,
          PlanUnderAllocator(in.trace(), in.hardware, budget, options.physics,
                             [&](int64_t resident_budget) {
                               return RunPolicy(policy, in.trace(), in.hardware,
                                                resident_budget, options);
                             }));
      AddScaledReplays(in.trace(), in.hardware, budget, options.physics,
                       result);
      if (observer_ != nullptr) {
        observer_->Planned(Method::kCompare, policy, result,
                           absl::Now() - start);
      }
      v1::ComparisonEntry* entry = comparison.add_entries();
      entry->set_policy(PolicyToProto(policy));
      entry->set_budget_bytes(budget);
      if (budget == kUnlimitedBytes) {
        entry->set_budget_unlimited(true);
      } else if (peak > 0) {
        entry->set_budget_fraction_of_peak(static_cast<double>(budget) / peak);
      }
      *entry->mutable_report() = PlanningReportToProto(in.trace(), result);
      entry->mutable_report()->clear_plan();
    }
  }
  if (should_stop && should_stop()) return Stopped();
  return response;
}

absl::StatusOr<v1::FrontierResponse> ServiceCore::Frontier(
    const v1::FrontierRequest& request, const StopFunction& should_stop) const {
  return RunFrontier(request, nullptr, should_stop);
}

absl::StatusOr<v1::FrontierResponse> ServiceCore::Frontier(
    const Decoded<v1::FrontierRequest>& request,
    const StopFunction& should_stop) const {
  if (request.trace == nullptr)
    return absl::InternalError("Frontier: a decoded trace expected");
  return RunFrontier(request.message, request.trace, should_stop);
}

absl::StatusOr<v1::FrontierResponse> ServiceCore::RunFrontier(
    const v1::FrontierRequest& request, const Trace* decoded_trace,
    const StopFunction& should_stop) const {
  ScopedStop scope(&should_stop);
  Inputs in;
  SLACKSWAP_RETURN_IF_ERROR(Convert(request.trace(), decoded_trace,
                                    request.hardware(), request.physics(), in));
  FieldViolations v;
  if (request.budget_fractions_size() > kMaxFrontierPoints) {
    v.Add("budget_fractions",
          absl::StrCat("at most ", kMaxFrontierPoints, " budgets"));
  }
  for (int i = 0; i < request.budget_fractions_size() && !v.full(); ++i) {
    const double f = request.budget_fractions(i);
    if (!std::isfinite(f) || f <= 0 || f > 1) {
      v.Add(absl::StrCat("budget_fractions[", i, "]"), "must be in (0, 1]");
    }
  }
  const double target = request.target_throughput_ratio();
  if (!std::isfinite(target) || target < 0 || target > 1) {
    v.Add("target_throughput_ratio", "must be in [0, 1] (0: no target)");
  }
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  SLACKSWAP_ASSIGN_OR_RETURN(
      PolicyOptions options,
      OptionsFrom(request.options(), in.physics, should_stop));
  // The curve shows no bounds: the linear program would only cost time.
  options.slackswap.linear_program_bound = false;

  std::vector<double> fractions(request.budget_fractions().begin(),
                                request.budget_fractions().end());
  if (fractions.empty()) {
    for (int i = 2; i <= 20; ++i) fractions.push_back(0.05 * i);
  }
  std::sort(fractions.begin(), fractions.end());
  fractions.erase(std::unique(fractions.begin(), fractions.end()),
                  fractions.end());
  // The curve's points and the search for its first (the smallest budget
  // SlackSwap meets: a bisection to 1/1000 of the peak, 11 plans), then (with
  // a target) the peak and another such bisection.
  const int64_t runs =
      static_cast<int64_t>(fractions.size()) + 11 + (target > 0 ? 12 : 0);
  CostContext context;
  context.work_field = "budget_fractions";
  SLACKSWAP_RETURN_IF_ERROR(CheckCost(
      in.trace(), in.hardware, {Policy::kSlackSwap}, runs, options, context));

  SLACKSWAP_ASSIGN_OR_RETURN(
      const FrontierCurve frontier,
      ComputeFrontier(in.trace(), fractions, target,
                      [&](int64_t budget) -> absl::StatusOr<PlanningResult> {
                        if (should_stop && should_stop()) return Stopped();
                        return RunObserved(Method::kFrontier,
                                           Policy::kSlackSwap, in.trace(),
                                           in.hardware, budget, options);
                      }));
  const int64_t peak = frontier.all_keep_peak_bytes;
  v1::FrontierResponse response;
  response.set_all_keep_peak_bytes(peak);
  response.set_ideal_ns(in.trace().ideal_ns);
  response.set_proven_floor_bytes(frontier.proven_floor_bytes);
  for (const FrontierPoint& p : frontier.points) {
    *response.add_points() =
        FrontierPointToProto(p, peak, frontier.proven_floor_bytes);
  }
  if (frontier.target_reached) {
    response.set_target_reached(true);
    *response.mutable_smallest_budget() = FrontierPointToProto(
        frontier.smallest_budget, peak, frontier.proven_floor_bytes);
  }
  return response;
}

absl::StatusOr<v1::PlanNodeResponse> ServiceCore::PlanNode(
    const v1::PlanNodeRequest& request, const StopFunction& should_stop) const {
  return RunPlanNode(request, nullptr, should_stop);
}

absl::StatusOr<v1::PlanNodeResponse> ServiceCore::PlanNode(
    const Decoded<v1::PlanNodeRequest>& request,
    const StopFunction& should_stop) const {
  if (request.job_traces == nullptr)
    return absl::InternalError("PlanNode: decoded job traces expected");
  return RunPlanNode(request.message, request.job_traces, should_stop);
}

absl::StatusOr<v1::PlanNodeResponse> ServiceCore::RunPlanNode(
    const v1::PlanNodeRequest& request,
    const std::vector<Trace>* decoded_traces,
    const StopFunction& should_stop) const {
  ScopedStop scope(&should_stop);
  SLACKSWAP_ASSIGN_OR_RETURN(const int64_t gpus, CheckNodeFields(request));
  const int steps = request.steps() == 0 ? 4 : request.steps();
  SLACKSWAP_ASSIGN_OR_RETURN(Hardware node,
                             HardwareFromProto(request.hardware()));
  SLACKSWAP_ASSIGN_OR_RETURN(const Physics physics,
                             PhysicsFromProto(request.physics()));
  node.gpus_per_uplink = static_cast<int32_t>(gpus);
  SLACKSWAP_ASSIGN_OR_RETURN(
      PolicyOptions options,
      OptionsFrom(request.options(), physics, should_stop));
  options.slackswap.linear_program_bound = false;
  if (decoded_traces != nullptr &&
      static_cast<int>(decoded_traces->size()) != request.jobs_size()) {
    return absl::InternalError("PlanNode: a decoded trace per job expected");
  }
  std::vector<Trace> owned(decoded_traces == nullptr ? request.jobs_size() : 0);
  auto trace_of = [&](int i) -> const Trace& {
    return decoded_traces != nullptr ? (*decoded_traces)[i] : owned[i];
  };
  std::vector<NodePlanJob> jobs;
  // The node holds every job's trace and plans at once: each job's estimate
  // counts those of the jobs before it.
  CostContext context;
  for (int i = 0; i < request.jobs_size(); ++i) {
    // Each job converts and checks a trace of its own: stop between them.
    if (should_stop && should_stop()) return Stopped();
    const v1::NodeJob& job = request.jobs(i);
    const std::string at = absl::StrCat("jobs[", i, "]");
    const std::string trace_field = absl::StrCat(at, ".trace");
    if (decoded_traces == nullptr) {
      absl::StatusOr<Trace> trace = TraceFromProto(job.trace());
      if (!trace.ok()) return RenameField(trace.status(), "trace", trace_field);
      owned[i] = *std::move(trace);
    }
    const Trace& trace = trace_of(i);
    // The node replays run every job's steps back to back (and one more
    // while the slowest finishes).
    absl::Status checked = CheckTimeRange(trace, node);
    if (checked.ok()) checked = CheckPhysics(trace, node, physics, steps + 1);
    if (!checked.ok()) return RenameField(checked, "trace", trace_field);
    absl::StatusOr<int64_t> budget = ResolveBudget(trace, job.budget());
    if (!budget.ok()) {
      return RenameField(budget.status(), "budget",
                         absl::StrCat(at, ".budget"));
    }
    NodePlanJob planned;
    planned.trace = &trace;
    planned.budget_bytes = *budget;
    planned.gpus = std::max(job.gpus(), 1);
    if (job.policy() != v1::POLICY_UNSPECIFIED) {
      SLACKSWAP_ASSIGN_OR_RETURN(
          planned.policy,
          PolicyFromProto(job.policy(), absl::StrCat(at, ".policy")));
      if (planned.policy == Policy::kGeneticSearch ||
          planned.policy == Policy::kOptimum) {
        return InvalidField(absl::StrCat(at, ".policy"),
                            "the genetic search and the exact optimum are "
                            "not planned for a node");
      }
    }
    // Each job: its plans for the shares tried, and replays beside the
    // others (its ranks in lockstep: one replay).
    context.memory_field = trace_field;
    context.work_field = trace_field;
    SLACKSWAP_RETURN_IF_ERROR(CheckCost(trace, node, {planned.policy},
                                        2 + request.jobs_size(), options,
                                        context));
    const CallCost cost =
        EstimatePolicyCost(trace, node, planned.policy, options);
    context.held_memory_bytes =
        SaturatingPlus(context.held_memory_bytes, cost.memory_bytes);
    context.held_work = SaturatingPlus(
        context.held_work,
        SaturatingTimes(cost.work, 2 + int64_t{request.jobs_size()}));
    context.held_note =
        absl::StrCat(", beside the ", i + 1, " job(s) before it on the node");
    jobs.push_back(planned);
  }
  if (should_stop && should_stop()) return Stopped();
  const absl::Time start = absl::Now();
  SLACKSWAP_ASSIGN_OR_RETURN(NodePlan plan,
                             slackswap::PlanNode(jobs, node, options, steps));
  if (should_stop && should_stop()) return Stopped();
  v1::PlanNodeResponse response;
  if (observer_ != nullptr) {
    for (size_t j = 0; j < plan.jobs.size(); ++j) {
      observer_->Planned(Method::kPlanNode, jobs[j].policy,
                         plan.jobs[j].planned, absl::Now() - start);
    }
  }
  AddNodeJobReports(request, plan, trace_of, response);
  response.set_planning_time_ns(absl::ToInt64Nanoseconds(absl::Now() - start));
  return response;
}

absl::StatusOr<v1::GenerateTraceResponse> ServiceCore::GenerateTrace(
    const v1::GenerateTraceRequest& request, const StopFunction&) const {
  FieldViolations v;
  absl::StatusOr<WorkloadSpec> spec = WorkloadPreset(request.workload_preset());
  if (!spec.ok())
    v.Add("workload_preset", std::string(spec.status().message()));
  absl::StatusOr<Hardware> hardware = HardwarePreset(request.hardware_preset());
  if (!hardware.ok())
    v.Add("hardware_preset", std::string(hardware.status().message()));
  if (request.batch() < 0) v.Add("batch", "must be >= 0 (0: the preset's)");
  if (request.sequence_length() < 0)
    v.Add("sequence_length", "must be >= 0 (0: the preset's)");
  if (request.layers() < 0) v.Add("layers", "must be >= 0 (0: the preset's)");
  if (!v1::Precision_IsValid(request.precision()))
    v.Add("precision", "unknown value");
  if (!v1::Attention_IsValid(request.attention()))
    v.Add("attention", "unknown value");
  const std::optional<Offload> offload = OffloadFromProto(request.offload());
  if (!offload.has_value()) v.Add("offload", "unknown value");
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  if (request.batch() > 0) spec->batch = request.batch();
  if (request.sequence_length() > 0)
    spec->sequence_length = request.sequence_length();
  if (request.layers() > 0) spec->layers = request.layers();
  if (const std::optional<Precision> precision =
          PrecisionFromProto(request.precision())) {
    spec->precision = *precision;
  }
  if (request.attention() == v1::ATTENTION_FLASH) spec->flash_attention = true;
  if (request.attention() == v1::ATTENTION_UNFUSED)
    spec->flash_attention = false;
  spec->offload = *offload;
  absl::StatusOr<TraceSpec> trace = slackswap::GenerateTrace(*spec, *hardware);
  if (!trace.ok()) return RenameField(trace.status(), "workload", "");
  v1::GenerateTraceResponse response;
  *response.mutable_summary() =
      TraceSummaryToProto(Summarize(*trace, *hardware));
  *response.mutable_hardware() = HardwareToProto(*hardware);
  *response.mutable_trace() = TraceSpecToProto(*trace);
  return response;
}

}  // namespace slackswap
