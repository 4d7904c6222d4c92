#include "simulator/trace_spec.h"

namespace slackswap {
namespace {

// Every field number of slackswap.v1.Trace, Operator, Tensor and
// FixedTransfer is below 16: each tag takes one byte.
constexpr int64_t kTag = 1;

int64_t VarintBytes(uint64_t value) {
  int64_t n = 1;
  while (value >= 0x80) {
    value >>= 7;
    ++n;
  }
  return n;
}

// A signed integer field (int32 and int64 alike: a negative int32 is
// written sign-extended, in ten bytes). Zero is not written.
int64_t IntField(int64_t value) {
  return value == 0 ? 0 : kTag + VarintBytes(static_cast<uint64_t>(value));
}

int64_t Delimited(int64_t payload) {
  return kTag + VarintBytes(static_cast<uint64_t>(payload)) + payload;
}

int64_t StringField(const std::string& s) {
  return s.empty() ? 0 : Delimited(static_cast<int64_t>(s.size()));
}

int64_t PackedField(const std::vector<int32_t>& values) {
  if (values.empty()) return 0;
  int64_t payload = 0;
  for (int32_t v : values)
    payload += VarintBytes(static_cast<uint64_t>(int64_t{v}));
  return Delimited(payload);
}

int64_t BoolField(bool value) { return value ? kTag + 1 : 0; }

// An optional int32 field: written when set (-1 in a spec is unset), zero
// included.
int64_t OptionalIntField(int32_t value) {
  return value == -1
             ? 0
             : kTag + VarintBytes(static_cast<uint64_t>(int64_t{value}));
}

// The wire enums' numbers: phases from 1, kinds from 1 with "other" last.
int64_t PhaseNumber(Phase phase) { return static_cast<int64_t>(phase) + 1; }
int64_t KindNumber(OpKind kind) {
  return kind == OpKind::kOther ? 11 : static_cast<int64_t>(kind);
}
// Directions from 1 (DIRECTION_D2H, DIRECTION_H2D).
int64_t DirectionNumber(Direction direction) {
  return static_cast<int64_t>(direction) + 1;
}

}  // namespace

int64_t SerializedBytes(const TraceSpec& spec) {
  int64_t bytes = StringField(spec.name);
  for (const OperatorSpec& op : spec.operators) {
    const int64_t payload =
        StringField(op.name) + IntField(PhaseNumber(op.phase)) +
        IntField(KindNumber(op.kind)) + IntField(op.duration_ns) +
        IntField(op.block_index) + IntField(op.workspace_bytes) +
        IntField(op.flops) + IntField(op.memory_traffic_bytes);
    bytes += Delimited(payload);
  }
  for (const TensorSpec& t : spec.tensors) {
    const int64_t payload =
        StringField(t.name) + IntField(t.size_bytes) + IntField(t.producer_op) +
        PackedField(t.use_ops) + IntField(t.recompute_duration_ns) +
        PackedField(t.recompute_inputs) + BoolField(t.swap_forbidden) +
        BoolField(t.recompute_forbidden);
    bytes += Delimited(payload);
  }
  for (const FixedTransferSpec& x : spec.fixed_transfers) {
    const int64_t payload =
        StringField(x.name) + IntField(DirectionNumber(x.direction)) +
        IntField(x.size_bytes) + OptionalIntField(x.after_op) +
        OptionalIntField(x.before_op) + IntField(x.gpu_bytes) +
        OptionalIntField(x.release_op);
    bytes += Delimited(payload);
  }
  return bytes;
}

}  // namespace slackswap
