// File: tiny_proto_trace.h
//
// Builds a slackswap.v1.Trace one operator, tensor and fixed transfer at a
// time, for the tests of the wire format and of its conversion (whose inputs
// are messages, with everything a message can hold that a TraceSpec cannot).
#ifndef SLACKSWAP_TESTS_SERVICE_TINY_PROTO_TRACE_H_
#define SLACKSWAP_TESTS_SERVICE_TINY_PROTO_TRACE_H_

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "service/trace_convert.h"
#include "simulator/trace.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap::testing {

class TinyProtoTrace {
 public:
  int Fwd(int64_t duration_ns, int32_t block = 0, int64_t workspace_bytes = 0) {
    return AddOp(v1::PHASE_FORWARD, duration_ns, block, workspace_bytes);
  }
  int Bwd(int64_t duration_ns, int32_t block = 0, int64_t workspace_bytes = 0) {
    return AddOp(v1::PHASE_BACKWARD, duration_ns, block, workspace_bytes);
  }
  int Tensor(int64_t size_bytes, int32_t producer,
             std::initializer_list<int32_t> uses, int64_t recompute_ns = 0,
             std::initializer_list<int32_t> recompute_inputs = {}) {
    v1::Tensor* t = proto.add_tensors();
    t->set_name(absl::StrCat("t", proto.tensors_size() - 1));
    t->set_size_bytes(size_bytes);
    t->set_producer_op(producer);
    for (int32_t u : uses) t->add_use_ops(u);
    t->set_recompute_duration_ns(recompute_ns);
    for (int32_t r : recompute_inputs) t->add_recompute_inputs(r);
    return proto.tensors_size() - 1;
  }
  // A fixed transfer; an index of -1 is left unset.
  int Fixed(v1::Direction direction, int64_t size_bytes, int32_t after_op = -1,
            int32_t before_op = -1, int64_t gpu_bytes = 0,
            int32_t release_op = -1) {
    v1::FixedTransfer* x = proto.add_fixed_transfers();
    x->set_name(absl::StrCat("x", proto.fixed_transfers_size() - 1));
    x->set_direction(direction);
    x->set_size_bytes(size_bytes);
    if (after_op != -1) x->set_after_op(after_op);
    if (before_op != -1) x->set_before_op(before_op);
    x->set_gpu_bytes(gpu_bytes);
    if (release_op != -1) x->set_release_op(release_op);
    return proto.fixed_transfers_size() - 1;
  }
  slackswap::Trace Build() const {
    absl::StatusOr<slackswap::Trace> trace = TraceFromProto(proto);
    EXPECT_TRUE(trace.ok()) << trace.status();
    return trace.ok() ? *std::move(trace) : slackswap::Trace();
  }

  v1::Trace proto;

 private:
  int AddOp(v1::Phase phase, int64_t duration_ns, int32_t block,
            int64_t workspace_bytes) {
    v1::Operator* op = proto.add_operators();
    op->set_name(absl::StrCat("op", proto.operators_size() - 1));
    op->set_phase(phase);
    op->set_kind(v1::OP_KIND_OTHER);
    op->set_duration_ns(duration_ns);
    op->set_block_index(block);
    op->set_workspace_bytes(workspace_bytes);
    return proto.operators_size() - 1;
  }
};

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_SERVICE_TINY_PROTO_TRACE_H_
