// Traces shaped to stress the planners' data structures, shared by the tests
// (tests/planner/hardening_test.cc) and the benchmarks
// (tests/benchmarks/planner_benchmark.cc).
#ifndef SLACKSWAP_TESTS_PLANNER_SHAPED_TRACES_H_
#define SLACKSWAP_TESTS_PLANNER_SHAPED_TRACES_H_

#include <algorithm>
#include <cstdint>
#include <string>

#include "simulator/hardware.h"
#include "simulator/trace_spec.h"

namespace slackswap::testing {

// n forward ops each producing one 1 MB tensor, read by the next forward op
// and by the mirrored backward op. Recompute inputs and blocks by `shape`:
//   chain:        t[i] is rebuilt from t[i-1], all in one block;
//   chain-blocks: the same with a block per op;
//   star:         every t[i] is rebuilt from t[0];
//   dag:          from up to three of the 50 tensors before it.
// Rebuild costs rise along the trace, so a recompute pass marks tensors from
// the start of a chain: each mark lands above everything marked so far.
inline TraceSpec ShapedTrace(const std::string& shape, int n) {
  TraceSpec t;
  t.name = shape;
  const bool blocks = shape == "chain-blocks";
  for (int i = 0; i < 2 * n; ++i) {
    OperatorSpec& op = t.operators.emplace_back();
    const bool forward = i < n;
    op.phase = forward ? Phase::kForward : Phase::kBackward;
    op.kind = OpKind::kElementwise;
    op.duration_ns = forward ? 1000 : 2000;
    op.block_index = blocks ? (forward ? i : 2 * n - 1 - i) : 0;
  }
  uint32_t random = 12345;
  for (int i = 0; i < n; ++i) {
    TensorSpec& tensor = t.tensors.emplace_back();
    tensor.size_bytes = 1'000'000;
    tensor.producer_op = i;
    tensor.use_ops.push_back(i + 1 < n ? i + 1 : n);
    tensor.use_ops.push_back(2 * n - 1 - i);
    tensor.recompute_duration_ns = 1000 + i;
    if (i == 0) continue;
    if (shape == "chain" || shape == "chain-blocks") {
      tensor.recompute_inputs.push_back(i - 1);
    } else if (shape == "star") {
      tensor.recompute_inputs.push_back(0);
    } else {
      for (int k = 0; k < 3; ++k) {
        random = random * 1103515245u + 12345u;
        const int lo = std::max(0, i - 50);
        tensor.recompute_inputs.push_back(
            lo +
            static_cast<int>((random >> 8) % static_cast<uint32_t>(i - lo)));
      }
    }
  }
  return t;
}

// A link a million times slower than PCIe: nothing can be swapped in time, so
// the recompute pass does all the work.
inline Hardware SlowLink() {
  Hardware h;
  h.name = "slow-link";
  h.d2h_bytes_per_second = 1'000'000;
  h.h2d_bytes_per_second = 1'000'000;
  h.matmul_flops_per_second = 1'000'000'000'000;
  h.hbm_bytes_per_second = 1'000'000'000'000;
  return h;
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_PLANNER_SHAPED_TRACES_H_
