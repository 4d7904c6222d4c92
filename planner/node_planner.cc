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

// One node's plan (node_planner.h): each job alone, the splits of the
// uplink to try, the best split's plans replayed together, and each job's
// effect on the others.
class NodeRun {
 public:
  NodeRun(const std::vector<NodePlanJob>& jobs, const Hardware& node,
          const PolicyOptions& options, int steps)
      : jobs_(jobs),
        n_(jobs.size()),
        node_(node),
        options_(options),
        node_options_(options),
        steps_(steps) {
    // Every plan here, alone or shared, gets a quarter of the improvement
    // step's budget: a node asks for up to three plans per job.
    node_options_.slackswap.polish_work /= kNodePolishDivisor;
  }

  absl::StatusOr<NodePlan> Run() {
    NodePlan out;
    out.jobs.resize(n_);
    SLACKSWAP_ASSIGN_OR_RETURN(const std::vector<double> demand, Alone(out));
    Candidate best;
    bool have_best = false;
    for (const std::vector<double>& shares : Splits(demand)) {
      SLACKSWAP_ASSIGN_OR_RETURN(Candidate c, Try(shares));
      ++out.candidates;
      if (!have_best || c.cost < best.cost) {
        best = std::move(c);
        have_best = true;
      }
    }
    SLACKSWAP_ASSIGN_OR_RETURN(const std::vector<double> caused, Caused(best));
    for (size_t j = 0; j < n_; ++j) Fill(best, j, caused[j], out.jobs[j]);
    return out;
  }

 private:
  bool Stopped() const {
    return options_.should_stop && options_.should_stop();
  }

  absl::StatusOr<PlanningResult> PlanFor(size_t j, double share) const {
    if (Stopped()) return PlanningStopped();
    return RunPolicyWithinBudget(jobs_[j].policy, *jobs_[j].trace,
                                 ShareOf(node_, jobs_[j].gpus, share),
                                 jobs_[j].budget_bytes, node_options_);
  }

  // Each job alone on the node: its step (into `out`), and its demand on
  // the uplink (returned).
  absl::StatusOr<std::vector<double>> Alone(NodePlan& out) const {
    std::vector<double> demand(n_, 0);
    for (size_t j = 0; j < n_; ++j) {
      SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult alone, PlanFor(j, 1.0));
      out.jobs[j].alone_step_ns = alone.replay.iteration_ns;
      if (alone.feasible && alone.replay.iteration_ns > 0) {
        demand[j] = static_cast<double>(alone.replay.swapped_bytes) /
                    static_cast<double>(alone.replay.iteration_ns) *
                    jobs_[j].gpus;
      }
    }
    return demand;
  }

  // The splits to try: even by GPUs; by demand (when it differs).
  std::vector<std::vector<double>> Splits(
      const std::vector<double>& demand) const {
    int32_t gpus = 0;
    for (const NodePlanJob& j : jobs_) gpus += j.gpus;
    double total_demand = 0;
    for (double d : demand) total_demand += d;
    std::vector<std::vector<double>> splits(1, std::vector<double>(n_));
    for (size_t j = 0; j < n_; ++j)
      splits[0][j] = static_cast<double>(jobs_[j].gpus) / gpus;
    const bool capped = node_.uplink_d2h_bytes_per_second > 0 ||
                        node_.uplink_h2d_bytes_per_second > 0;
    if (capped && n_ > 1 && total_demand > 0) {
      std::vector<double> by_demand(n_);
      for (size_t j = 0; j < n_; ++j) {
        // Never below a tenth of the even share: every job copies something.
        by_demand[j] = std::max(demand[j] / total_demand, splits[0][j] / 10);
      }
      if (by_demand != splits[0]) splits.push_back(by_demand);
    }
    return splits;
  }

  // The plans of `members`, replayed on the node together.
  std::vector<NodeJobSteps> ReplayTogether(
      const std::vector<PlanningResult>& plans,
      const std::vector<size_t>& members) const {
    std::vector<Schedule> schedules;
    schedules.reserve(members.size());
    std::vector<NodeJob> node_jobs;
    for (size_t j : members) {
      schedules.push_back(DeriveSchedule(*jobs_[j].trace, plans[j].plan));
      NodeJob job;
      job.trace = jobs_[j].trace;
      job.plan = &plans[j].plan;
      job.schedule = &schedules.back();
      job.options = AllocatorReplayOptions(
          jobs_[j].budget_bytes, options_.physics, plans[j].per_layer_barriers);
      job.gpus = jobs_[j].gpus;
      node_jobs.push_back(job);
    }
    return SimulateNode(node_jobs, node_, steps_);
  }

  // Every job planned for its share, replayed together, and the cost: the
  // jobs' steps over their ideal, weighted by GPUs.
  absl::StatusOr<Candidate> Try(const std::vector<double>& shares) const {
    Candidate c;
    c.shares = shares;
    for (size_t j = 0; j < n_; ++j) {
      SLACKSWAP_ASSIGN_OR_RETURN(PlanningResult p, PlanFor(j, shares[j]));
      c.plans.push_back(std::move(p));
    }
    std::vector<size_t> everyone(n_);
    for (size_t j = 0; j < n_; ++j) everyone[j] = j;
    c.steps = ReplayTogether(c.plans, everyone);
    if (Stopped()) return PlanningStopped();
    for (size_t j = 0; j < n_; ++j) {
      const double ideal = static_cast<double>(jobs_[j].trace->ideal_ns);
      // An infeasible job costs as if it never finished.
      const double step = c.steps[j].feasible && c.plans[j].feasible
                              ? static_cast<double>(c.steps[j].mean_step_ns)
                              : 1e30;
      c.cost += jobs_[j].gpus * step / std::max(ideal, 1.0);
    }
    return c;
  }

  // Each job's effect on the others: the node without it.
  absl::StatusOr<std::vector<double>> Caused(const Candidate& best) const {
    std::vector<double> caused(n_, 0);
    if (n_ <= 1) return caused;
    for (size_t j = 0; j < n_; ++j) {
      std::vector<size_t> others;
      for (size_t k = 0; k < n_; ++k)
        if (k != j) others.push_back(k);
      const std::vector<NodeJobSteps> without =
          ReplayTogether(best.plans, others);
      if (Stopped()) return PlanningStopped();
      double sum = 0;
      for (size_t i = 0; i < others.size(); ++i) {
        const int64_t base = without[i].mean_step_ns;
        const int64_t with = best.steps[others[i]].mean_step_ns;
        if (base > 0 && with > 0) sum += static_cast<double>(with) / base - 1;
      }
      caused[j] = sum / static_cast<double>(others.size());
    }
    return caused;
  }

  void Fill(Candidate& best, size_t j, double caused,
            NodePlanJobResult& r) const {
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
    r.slowdown_caused = caused;
  }

  const std::vector<NodePlanJob>& jobs_;
  const size_t n_;
  const Hardware& node_;
  const PolicyOptions& options_;
  PolicyOptions node_options_;
  const int steps_;
};

}  // namespace

absl::StatusOr<NodePlan> PlanNode(const std::vector<NodePlanJob>& jobs,
                                  const Hardware& node,
                                  const PolicyOptions& options, int steps) {
  return NodeRun(jobs, node, options, steps).Run();
}

}  // namespace slackswap
