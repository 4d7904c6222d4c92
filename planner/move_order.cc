#include "planner/move_order.h"

#include <algorithm>

namespace slackswap {

std::vector<int32_t> TensorsInMoveOrder(const Trace& trace,
                                        const std::vector<bool>& focus,
                                        const Plan& plan,
                                        const SimulationResult& replay) {
  std::vector<int32_t> order;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (trace.tensors[t].size_bytes > 0 && (focus.empty() || focus[t])) {
      order.push_back(t);
    }
  }
  // Group, then key within the group; ties by tensor id.
  auto group = [&](int32_t t) {
    if (!replay.feasible) {
      const int32_t stuck = replay.infeasibility.op;
      const Tensor& x = trace.tensors[t];
      if (x.producer_op <= stuck && stuck <= x.last_backward_use) return 0;
      return 1;
    }
    switch (plan.decisions[t]) {
      case Decision::kRecompute:
        return 0;
      case Decision::kSwap:
        return 1;
      case Decision::kKeep:
        return 2;
    }
    return 3;
  };
  auto key = [&](int32_t t) {
    const Tensor& x = trace.tensors[t];
    return plan.decisions[t] == Decision::kRecompute && replay.feasible
               ? x.recompute_ns
               : x.size_bytes;
  };
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const int ga = group(a), gb = group(b);
    if (ga != gb) return ga < gb;
    return key(a) > key(b);
  });
  return order;
}

}  // namespace slackswap
