#include "planner/replay_against.h"

namespace slackswap {

bool Better(const SimulationResult& a, const SimulationResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  if (a.feasible) return a.iteration_ns < b.iteration_ns;
  if (a.infeasibility.op != b.infeasibility.op)
    return a.infeasibility.op > b.infeasibility.op;
  return a.iteration_ns > b.iteration_ns;
}

SimulationResult ReplayAgainst(const Trace& trace, const Hardware& hardware,
                               const Plan& plan, SimulationOptions options,
                               const SimulationResult& reference,
                               std::vector<uint8_t>* waited,
                               const Schedule* derived,
                               std::vector<int32_t>* need,
                               const ResumeBase* resume) {
  options.resume_from = resume;
  if (reference.feasible) {
    options.cutoff_ns = reference.iteration_ns;
    int64_t steps_ns = trace.ideal_ns;
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      if (plan.decisions[t] == Decision::kRecompute)
        steps_ns += trace.tensors[t].recompute_ns;
    }
    if (steps_ns >= options.cutoff_ns) {
      SimulationResult cut;
      cut.feasible = false;
      cut.cut_off = true;
      cut.infeasibility.op = 0;  // (costs only a replay's overhead)
      return cut;
    }
  }
  if (waited != nullptr) {
    waited->assign(trace.tensors.size(), 0);
    options.issue_waited = waited;
  }
  if (derived != nullptr)
    return SimulateSchedule(trace, hardware, plan, *derived, options);
  // Derived into the thread's own schedule, whose memory each replay reuses.
  thread_local Schedule schedule;
  if (need != nullptr)
    DeriveSchedule(trace, plan, schedule, *need);
  else
    DeriveSchedule(trace, plan, schedule);
  return SimulateSchedule(trace, hardware, plan, schedule, options);
}

}  // namespace slackswap
