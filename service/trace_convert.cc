#include "service/trace_convert.h"

#include "service/trace_wire.h"
#include "simulator/trace_validation.h"

namespace slackswap {
namespace {

// The wire form's enums, for the parsed message and the decoder's view alike
// (both give v1::Phase and v1::OpKind).
struct ProtoForm {
  template <typename Operator>
  static std::optional<Phase> PhaseOf(const Operator& op) {
    return PhaseFromProto(op.phase());
  }
  template <typename Operator>
  static std::optional<OpKind> KindOf(const Operator& op) {
    return KindFromProto(op.kind());
  }
  template <typename FixedTransfer>
  static std::optional<Direction> DirectionOf(const FixedTransfer& x) {
    return DirectionFromProto(x.direction());
  }
};

static_assert(static_cast<int>(OpKind::kMatmul) == v1::OP_KIND_MATMUL &&
                  static_cast<int>(OpKind::kOptimizer) == v1::OP_KIND_OPTIMIZER,
              "the wire numbers 1 to 10 are the internal kinds from kMatmul "
              "on; other is 11 on the wire (and unspecified, 0, reads as it)");
static_assert(static_cast<int>(Direction::kD2H) + 1 == v1::DIRECTION_D2H &&
                  static_cast<int>(Direction::kH2D) + 1 == v1::DIRECTION_H2D,
              "the wire numbers of the directions are the internal ones + 1 "
              "(simulator/trace_spec.cc counts them so)");

}  // namespace

std::optional<Phase> PhaseFromProto(v1::Phase phase) {
  switch (phase) {
    case v1::PHASE_FORWARD:
      return Phase::kForward;
    case v1::PHASE_BACKWARD:
      return Phase::kBackward;
    case v1::PHASE_OPTIMIZER:
      return Phase::kOptimizer;
    default:
      return std::nullopt;
  }
}

v1::Phase PhaseToProto(Phase phase) {
  switch (phase) {
    case Phase::kForward:
      return v1::PHASE_FORWARD;
    case Phase::kBackward:
      return v1::PHASE_BACKWARD;
    case Phase::kOptimizer:
      return v1::PHASE_OPTIMIZER;
  }
  return v1::PHASE_UNSPECIFIED;
}

std::optional<OpKind> KindFromProto(v1::OpKind kind) {
  // The trace conversion test checks both directions.
  if (kind >= v1::OP_KIND_MATMUL && kind <= v1::OP_KIND_OPTIMIZER)
    return static_cast<OpKind>(static_cast<int>(kind));
  if (kind == v1::OP_KIND_UNSPECIFIED || kind == v1::OP_KIND_OTHER)
    return OpKind::kOther;
  return std::nullopt;
}

v1::OpKind KindToProto(OpKind kind) {
  return kind == OpKind::kOther
             ? v1::OP_KIND_OTHER
             : static_cast<v1::OpKind>(static_cast<int>(kind));
}

std::optional<Direction> DirectionFromProto(v1::Direction direction) {
  switch (direction) {
    case v1::DIRECTION_D2H:
      return Direction::kD2H;
    case v1::DIRECTION_H2D:
      return Direction::kH2D;
    default:
      return std::nullopt;
  }
}

// An invalid direction (a value outside the enum) stays invalid on the wire,
// as SerializedBytes (trace_spec.h) counts it.
v1::Direction DirectionToProto(Direction direction) {
  return static_cast<v1::Direction>(static_cast<int>(direction) + 1);
}

absl::StatusOr<Trace> TraceFromProto(const v1::Trace& proto) {
  return trace_validation::Validate<ProtoForm>(proto);
}

std::optional<absl::StatusOr<Trace>> TraceFromWire(absl::string_view bytes) {
  WireTrace wire;
  if (!DecodeWireTrace(bytes, wire)) return std::nullopt;
  return trace_validation::Validate<ProtoForm>(wire);
}

v1::Trace TraceSpecToProto(const TraceSpec& spec) {
  v1::Trace proto;
  proto.set_name(spec.name);
  proto.mutable_operators()->Reserve(static_cast<int>(spec.operators.size()));
  for (const OperatorSpec& op : spec.operators) {
    v1::Operator* out = proto.add_operators();
    out->set_name(op.name);
    out->set_phase(PhaseToProto(op.phase));
    out->set_kind(KindToProto(op.kind));
    out->set_duration_ns(op.duration_ns);
    out->set_block_index(op.block_index);
    out->set_workspace_bytes(op.workspace_bytes);
    out->set_flops(op.flops);
    out->set_memory_traffic_bytes(op.memory_traffic_bytes);
  }
  proto.mutable_tensors()->Reserve(static_cast<int>(spec.tensors.size()));
  for (const TensorSpec& t : spec.tensors) {
    v1::Tensor* out = proto.add_tensors();
    out->set_name(t.name);
    out->set_size_bytes(t.size_bytes);
    out->set_producer_op(t.producer_op);
    out->mutable_use_ops()->Add(t.use_ops.begin(), t.use_ops.end());
    out->set_recompute_duration_ns(t.recompute_duration_ns);
    out->mutable_recompute_inputs()->Add(t.recompute_inputs.begin(),
                                         t.recompute_inputs.end());
    out->set_swap_forbidden(t.swap_forbidden);
    out->set_recompute_forbidden(t.recompute_forbidden);
  }
  proto.mutable_fixed_transfers()->Reserve(
      static_cast<int>(spec.fixed_transfers.size()));
  for (const FixedTransferSpec& x : spec.fixed_transfers) {
    v1::FixedTransfer* out = proto.add_fixed_transfers();
    out->set_name(x.name);
    out->set_direction(DirectionToProto(x.direction));
    out->set_size_bytes(x.size_bytes);
    if (x.after_op != -1) out->set_after_op(x.after_op);
    if (x.before_op != -1) out->set_before_op(x.before_op);
    out->set_gpu_bytes(x.gpu_bytes);
    if (x.release_op != -1) out->set_release_op(x.release_op);
  }
  return proto;
}

}  // namespace slackswap
