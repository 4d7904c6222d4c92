#include "planner/basic_plans.h"

#include <algorithm>

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

Plan FreeEverythingPlan(const Trace& trace) {
  Plan plan = Plan::AllKeep(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (!tensor.swap_forbidden) {
      plan.decisions[t] = Decision::kSwap;
      plan.prefetch_issue_op[t] =
          std::max(trace.first_backward_op(), tensor.last_forward_use + 1);
    } else if (!tensor.recompute_forbidden) {
      plan.decisions[t] = Decision::kRecompute;
    }
  }
  return plan;
}

}  // namespace slackswap
