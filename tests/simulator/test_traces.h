// Helpers that build small hand-written traces for the tests.
#ifndef SLACKSWAP_TESTS_SIMULATOR_TEST_TRACES_H_
#define SLACKSWAP_TESTS_SIMULATOR_TEST_TRACES_H_

#include <initializer_list>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/trace.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"

namespace slackswap::testing {

// Builds a trace one operator and tensor at a time, as the simulator's
// TraceSpec (no wire format: the layers below the service build traces so).
class TinyTrace {
 public:
  int Fwd(int64_t duration_ns, int32_t block = 0, int64_t workspace_bytes = 0) {
    return AddOp(Phase::kForward, duration_ns, block, workspace_bytes);
  }
  int Bwd(int64_t duration_ns, int32_t block = 0, int64_t workspace_bytes = 0) {
    return AddOp(Phase::kBackward, duration_ns, block, workspace_bytes);
  }
  int Tensor(int64_t size_bytes, int32_t producer,
             std::initializer_list<int32_t> uses, int64_t recompute_ns = 0,
             std::initializer_list<int32_t> recompute_inputs = {}) {
    TensorSpec& t = spec.tensors.emplace_back();
    t.name = absl::StrCat("t", spec.tensors.size() - 1);
    t.size_bytes = size_bytes;
    t.producer_op = producer;
    t.use_ops = uses;
    t.recompute_duration_ns = recompute_ns;
    t.recompute_inputs = recompute_inputs;
    return static_cast<int>(spec.tensors.size()) - 1;
  }
  // A fixed transfer (-1: unset); returns its index.
  int Fixed(Direction direction, int64_t size_bytes, int32_t after_op,
            int32_t before_op, int64_t gpu_bytes = 0, int32_t release_op = -1) {
    FixedTransferSpec& x = spec.fixed_transfers.emplace_back();
    x.name = absl::StrCat("f", spec.fixed_transfers.size() - 1);
    x.direction = direction;
    x.size_bytes = size_bytes;
    x.after_op = after_op;
    x.before_op = before_op;
    x.gpu_bytes = gpu_bytes;
    x.release_op = release_op;
    return static_cast<int>(spec.fixed_transfers.size()) - 1;
  }
  slackswap::Trace Build() const {
    absl::StatusOr<slackswap::Trace> trace = ValidateTrace(spec);
    EXPECT_TRUE(trace.ok()) << trace.status();
    return trace.ok() ? *std::move(trace) : slackswap::Trace();
  }

  TraceSpec spec;

 private:
  int AddOp(Phase phase, int64_t duration_ns, int32_t block,
            int64_t workspace_bytes) {
    OperatorSpec& op = spec.operators.emplace_back();
    op.name = absl::StrCat("op", spec.operators.size() - 1);
    op.phase = phase;
    op.kind = OpKind::kOther;
    op.duration_ns = duration_ns;
    op.block_index = block;
    op.workspace_bytes = workspace_bytes;
    return static_cast<int>(spec.operators.size()) - 1;
  }
};

// A link that moves one byte per nanosecond each way, with no latency: a
// transfer of N bytes takes N ns, which keeps hand computations exact.
inline Hardware ByteNanosecondLink(int64_t latency_ns = 0) {
  Hardware h;
  h.name = "test-link";
  h.d2h_bytes_per_second = 1'000'000'000;
  h.h2d_bytes_per_second = 1'000'000'000;
  h.transfer_latency_ns = latency_ns;
  h.matmul_flops_per_second = 1'000'000'000'000;
  h.hbm_bytes_per_second = 1'000'000'000'000;
  return h;
}

// A plan from a decision string: 'k' keep, 's' swap, 'r' recompute, one per
// tensor; swapped tensors get `issue_op`.
inline Plan PlanOf(const std::string& decisions, int32_t issue_op = 0) {
  Plan plan;
  for (char c : decisions) {
    plan.decisions.push_back(c == 's'   ? Decision::kSwap
                             : c == 'r' ? Decision::kRecompute
                                        : Decision::kKeep);
    plan.prefetch_issue_op.push_back(issue_op);
  }
  return plan;
}

inline bool SameCsr(const Csr& a, const Csr& b) {
  return a.begin == b.begin && a.items == b.items;
}

// Every field of the compact trace.
inline void ExpectSameTrace(const Trace& a, const Trace& b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(a.ops.size(), b.ops.size());
  for (size_t i = 0; i < a.ops.size(); ++i) {
    EXPECT_EQ(a.ops[i].duration_ns, b.ops[i].duration_ns) << i;
    EXPECT_EQ(a.ops[i].workspace_bytes, b.ops[i].workspace_bytes) << i;
    EXPECT_EQ(a.ops[i].block_index, b.ops[i].block_index) << i;
    EXPECT_EQ(a.ops[i].phase, b.ops[i].phase) << i;
    EXPECT_EQ(a.ops[i].kind, b.ops[i].kind) << i;
  }
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const Tensor& x = a.tensors[i];
    const Tensor& y = b.tensors[i];
    EXPECT_EQ(x.size_bytes, y.size_bytes) << i;
    EXPECT_EQ(x.recompute_ns, y.recompute_ns) << i;
    EXPECT_EQ(x.producer_op, y.producer_op) << i;
    EXPECT_EQ(x.last_forward_use, y.last_forward_use) << i;
    EXPECT_EQ(x.first_backward_use, y.first_backward_use) << i;
    EXPECT_EQ(x.last_backward_use, y.last_backward_use) << i;
    EXPECT_EQ(x.swap_forbidden, y.swap_forbidden) << i;
    EXPECT_EQ(x.recompute_forbidden, y.recompute_forbidden) << i;
  }
  EXPECT_TRUE(SameCsr(a.uses, b.uses));
  EXPECT_TRUE(SameCsr(a.reads, b.reads));
  EXPECT_TRUE(SameCsr(a.produces, b.produces));
  EXPECT_TRUE(SameCsr(a.recompute_inputs, b.recompute_inputs));
  EXPECT_TRUE(SameCsr(a.recompute_dependents, b.recompute_dependents));
  EXPECT_EQ(a.recompute_topological_order, b.recompute_topological_order);
  ASSERT_EQ(a.fixed_transfers.size(), b.fixed_transfers.size());
  for (size_t i = 0; i < a.fixed_transfers.size(); ++i) {
    const FixedTransfer& x = a.fixed_transfers[i];
    const FixedTransfer& y = b.fixed_transfers[i];
    EXPECT_EQ(x.direction, y.direction) << i;
    EXPECT_EQ(x.size_bytes, y.size_bytes) << i;
    EXPECT_EQ(x.after_op, y.after_op) << i;
    EXPECT_EQ(x.before_op, y.before_op) << i;
    EXPECT_EQ(x.gpu_bytes, y.gpu_bytes) << i;
    EXPECT_EQ(x.release_op, y.release_op) << i;
  }
  EXPECT_EQ(a.op_allocation_bytes, b.op_allocation_bytes);
  EXPECT_EQ(a.num_forward_ops, b.num_forward_ops);
  EXPECT_EQ(a.num_backward_ops, b.num_backward_ops);
  EXPECT_EQ(a.ideal_ns, b.ideal_ns);
  EXPECT_EQ(a.total_tensor_bytes, b.total_tensor_bytes);
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SIMULATOR_TEST_TRACES_H_
