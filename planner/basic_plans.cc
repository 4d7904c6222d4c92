#include "planner/basic_plans.h"

namespace slackswap {

Plan IdealPlan(const Trace& trace) { return Plan::AllKeep(trace); }

Plan AllSwapPlan(const Trace& trace) {
  Plan plan = Plan::AllKeep(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (trace.tensors[t].swap_forbidden) continue;
    plan.decisions[t] = Decision::kSwap;
    plan.prefetch_issue_op[t] = trace.first_backward_op();
  }
  return plan;
}

}  // namespace slackswap
