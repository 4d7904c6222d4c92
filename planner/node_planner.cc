#include "planner/node_planner.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/saturating.h"
#include "base/status_macros.h"
#include "simulator/node_model.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

// The node as job `gpus` ranks see it with `share` of the uplink.
Hardware ShareOf(const Hardware& node, int32_t gpus, double share) {
  Hardware h = node;
  h.gpus_per_uplink = gpus;
  for (int64_t* uplink :
       {&h.uplink_d2h_bytes_per_second, &h.uplink_h2d_bytes_per_second}) {
    if (*uplink > 0) {
      // (In long double, exact for every int64; a share is at most 1.)
      *uplink = std::max<int64_t>(
          SaturatingInt64(static_cast<long double>(*uplink) * share), 1);
    }
  }
  return h;
}

struct Candidate {
  std::vector<double> shares;
  std::vector<PlanningResult> plans;
  std::vector<NodeJobSteps> steps;
  double cost = 0;
};

}  // namespace

absl::StatusOr<NodePlan> PlanNode(const std::vector<NodePlanJob>& jobs,
                                  const Hardware& node,
                                  const PolicyOptions& options, int steps) {
  const size_t n = jobs.size();
  int32_t gpus = 0;
  for (const NodePlanJob& j : jobs) gpus += j.gpus;
  // Every plan here, alone or shared, gets a quarter of the improvement
  // step's budget: a node asks for up to three plans per job.
  PolicyOptions node_options = options;
  node_options.slackswap.polish_work /= kNodePolishDivisor;
  auto stopped = [&] { return options.should_stop && options.should_stop(); };
  auto plan_for = [&](size_t j,
                      double share) -> absl::StatusOr<PlanningResult> {
    if (stopped()) return PlanningStopped();
    return RunPolicyWithinBudget(jobs[j].policy, *jobs[j].trace,
                                 ShareOf(node, jobs[j].gpus, share),
                                 jobs[j].budget_bytes, node_options);
  };
  // Each job alone on the node: its step, and its demand on the uplink.
  NodePlan out;
  out.jobs.resize(n);
  std::vector<double> demand(n, 0);
  double total_demand = 0;
  for (size_t j = 0; j < n; ++j) {
    SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult alone, plan_for(j, 1.0));
    out.jobs[j].alone_step_ns = alone.replay.iteration_ns;
    if (alone.feasible && alone.replay.iteration_ns > 0) {
      demand[j] = static_cast<double>(alone.replay.swapped_bytes) /
                  static_cast<double>(alone.replay.iteration_ns) * jobs[j].gpus;
    }
    total_demand += demand[j];
  }
  // The splits to try: even by GPUs; by demand (when it differs).
  std::vector<std::vector<double>> splits(1, std::vector<double>(n));
  for (size_t j = 0; j < n; ++j)
    splits[0][j] = static_cast<double>(jobs[j].gpus) / gpus;
  const bool capped = node.uplink_d2h_bytes_per_second > 0 ||
                      node.uplink_h2d_bytes_per_second > 0;
  if (capped && n > 1 && total_demand > 0) {
    std::vector<double> by_demand(n);
    for (size_t j = 0; j < n; ++j) {
      // Never below a tenth of the even share: every job copies something.
      by_demand[j] = std::max(demand[j] / total_demand, splits[0][j] / 10);
    }
    if (by_demand != splits[0]) splits.push_back(by_demand);
  }
  auto replay_together = [&](const std::vector<PlanningResult>& plans,
                             const std::vector<size_t>& members) {
    std::vector<Schedule> schedules;
    schedules.reserve(members.size());
    std::vector<NodeJob> node_jobs;
    for (size_t j : members) {
      schedules.push_back(DeriveSchedule(*jobs[j].trace, plans[j].plan));
      NodeJob job;
      job.trace = jobs[j].trace;
      job.plan = &plans[j].plan;
      job.schedule = &schedules.back();
      job.options = AllocatorReplayOptions(jobs[j].budget_bytes, options.memory,
                                           plans[j].per_layer_barriers);
      job.gpus = jobs[j].gpus;
      node_jobs.push_back(job);
    }
    return SimulateNode(node_jobs, node, steps);
  };
  std::vector<size_t> everyone(n);
  for (size_t j = 0; j < n; ++j) everyone[j] = j;
  Candidate best;
  bool have_best = false;
  for (const std::vector<double>& shares : splits) {
    Candidate c;
    c.shares = shares;
    for (size_t j = 0; j < n; ++j) {
      SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult p, plan_for(j, shares[j]));
      c.plans.push_back(std::move(p));
    }
    c.steps = replay_together(c.plans, everyone);
    if (stopped()) return PlanningStopped();
    for (size_t j = 0; j < n; ++j) {
      const double ideal = static_cast<double>(jobs[j].trace->ideal_ns);
      // An infeasible job costs as if it never finished.
      const double step = c.steps[j].feasible && c.plans[j].feasible
                              ? static_cast<double>(c.steps[j].mean_step_ns)
                              : 1e30;
      c.cost += jobs[j].gpus * step / std::max(ideal, 1.0);
    }
    ++out.candidates;
    if (!have_best || c.cost < best.cost) {
      best = std::move(c);
      have_best = true;
    }
  }
  // Each job's effect on the others: the node without it.
  std::vector<double> caused(n, 0);
  if (n > 1) {
    for (size_t j = 0; j < n; ++j) {
      std::vector<size_t> others;
      for (size_t k = 0; k < n; ++k)
        if (k != j) others.push_back(k);
      const std::vector<NodeJobSteps> without =
          replay_together(best.plans, others);
      if (stopped()) return PlanningStopped();
      double sum = 0;
      for (size_t i = 0; i < others.size(); ++i) {
        const int64_t base = without[i].mean_step_ns;
        const int64_t with = best.steps[others[i]].mean_step_ns;
        if (base > 0 && with > 0) sum += static_cast<double>(with) / base - 1;
      }
      caused[j] = sum / static_cast<double>(others.size());
    }
  }
  for (size_t j = 0; j < n; ++j) {
    NodePlanJobResult& r = out.jobs[j];
    r.planned = std::move(best.plans[j]);
    r.uplink_share = best.shares[j];
    r.shared_step_ns = best.steps[j].mean_step_ns;
    r.feasible = r.planned.feasible && best.steps[j].feasible;
    if (!r.planned.feasible) {
      r.reason = r.planned.reason;
    } else if (!best.steps[j].feasible) {
      r.reason = absl::StrCat("beside the other jobs: ",
                              best.steps[j].last.infeasibility.reason);
    }
    if (r.feasible && r.alone_step_ns > 0) {
      r.slowdown = static_cast<double>(r.shared_step_ns) /
                   static_cast<double>(r.alone_step_ns);
    }
    r.slowdown_caused = caused[j];
  }
  return out;
}

}  // namespace slackswap
