#include "planner/blocks.h"

#include <algorithm>

namespace slackswap {

std::vector<std::vector<int32_t>> BlockBodies(const Trace& trace) {
  int32_t max_block = 0;
  for (const Op& op : trace.ops)
    max_block = std::max(max_block, op.block_index);
  std::vector<std::vector<int32_t>> bodies(static_cast<size_t>(max_block) + 1);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (tensor.recompute_forbidden) continue;
    const int32_t block = trace.ops[tensor.producer_op].block_index;
    bool read_elsewhere = false;
    for (int32_t u : trace.uses.Row(t)) {
      if (trace.ops[u].phase == Phase::kForward &&
          trace.ops[u].block_index != block) {
        read_elsewhere = true;
      }
    }
    if (!read_elsewhere) bodies[block].push_back(t);
  }
  return bodies;
}

int32_t OneBlockAheadIssueOp(const Trace& trace,
                             const std::vector<int32_t>& run_start,
                             int32_t need_op) {
  const int32_t run = run_start[need_op];
  if (run <= trace.first_backward_op()) return run;
  return run_start[run - 1];
}

}  // namespace slackswap
