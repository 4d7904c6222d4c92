// The trace's wire conversions: a generated TraceSpec, its message and the
// message's bytes all validate to the same compact trace (or the same error),
// the serialized size is computed exactly without protobuf, and the enums map
// both ways.
#include "service/trace_convert.h"

#include <algorithm>
#include <random>
#include <string>

#include "gtest/gtest.h"
#include "simulator/hardware.h"
#include "simulator/small_traces.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"
#include "tests/simulator/test_traces.h"

namespace slackswap {
namespace {

using testing::ExpectSameTrace;

// The three forms agree: the spec, its message and the message's bytes.
void ExpectFormsAgree(const TraceSpec& spec) {
  const v1::Trace proto = TraceSpecToProto(spec);
  EXPECT_EQ(SerializedBytes(spec), static_cast<int64_t>(proto.ByteSizeLong()));
  const absl::StatusOr<Trace> from_spec = ValidateTrace(spec);
  const absl::StatusOr<Trace> from_proto = TraceFromProto(proto);
  ASSERT_EQ(from_spec.status(), from_proto.status());
  const std::optional<absl::StatusOr<Trace>> from_wire =
      TraceFromWire(proto.SerializeAsString());
  ASSERT_TRUE(from_wire.has_value());
  ASSERT_EQ(from_wire->status(), from_spec.status());
  if (!from_spec.ok()) return;
  ExpectSameTrace(*from_spec, *from_proto);
  ExpectSameTrace(*from_spec, **from_wire);
}

TEST(TraceConvertTest, GeneratedTracesAgreeInEveryForm) {
  for (const std::string& preset : WorkloadPresetNames()) {
    for (const std::string& gpu : HardwarePresetNames()) {
      SCOPED_TRACE(preset + " on " + gpu);
      WorkloadSpec spec = *WorkloadPreset(preset);
      if (spec.family != ModelFamily::kVgg16) spec.layers = 3;
      const absl::StatusOr<TraceSpec> trace =
          GenerateTrace(spec, *HardwarePreset(gpu));
      ASSERT_TRUE(trace.ok()) << trace.status();
      ExpectFormsAgree(*trace);
    }
  }
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SCOPED_TRACE(seed);
    ExpectFormsAgree(RandomSmallTrace(seed).trace);
  }
}

// The generator's offload modes add fixed transfers of every shape.
TEST(TraceConvertTest, GeneratedOffloadTracesAgreeInEveryForm) {
  for (Offload offload :
       {Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    for (const std::string preset : {"gpt2-xl", "llama-7b", "vgg16"}) {
      SCOPED_TRACE(preset + " with " + OffloadName(offload));
      WorkloadSpec spec = *WorkloadPreset(preset);
      if (spec.family != ModelFamily::kVgg16) spec.layers = 3;
      spec.offload = offload;
      const absl::StatusOr<TraceSpec> trace =
          GenerateTrace(spec, *HardwarePreset("a100"));
      ASSERT_TRUE(trace.ok()) << trace.status();
      EXPECT_FALSE(trace->fixed_transfers.empty());
      EXPECT_TRUE(ValidateTrace(*trace).ok()) << ValidateTrace(*trace).status();
      ExpectFormsAgree(*trace);
    }
  }
}

// Sizes at the edges of the encoding: zero fields left out, negative
// integers in ten bytes, names and packed runs past one length byte, and
// invalid specs, which all forms reject alike.
TEST(TraceConvertTest, EdgesOfTheEncodingAgree) {
  TraceSpec spec = RandomSmallTrace(3).trace;
  ExpectFormsAgree(spec);
  spec.name = std::string(200, 'n');
  spec.operators[0].name.clear();
  spec.operators[0].kind = OpKind::kOther;
  spec.operators[0].flops = int64_t{1} << 62;
  spec.tensors[0].size_bytes = 0;
  for (int i = 0; i < 100; ++i)
    spec.tensors[0].use_ops.push_back(spec.tensors[0].use_ops.back());
  ExpectFormsAgree(spec);
  spec.operators[1].block_index = -1;  // invalid: a ten-byte varint
  spec.tensors[1].recompute_duration_ns = -5;
  spec.tensors[1].recompute_inputs.push_back(-7);
  ExpectFormsAgree(spec);
  spec.operators[0].phase = Phase::kBackward;  // out of order
  ExpectFormsAgree(spec);
}

// A fixed transfer for a trace of `num_ops` operators: often valid, else
// with any of its rules broken (unset indices are -1).
FixedTransferSpec RandomFixedTransfer(std::mt19937_64& rng, int32_t num_ops) {
  // Mostly in [from, num_ops).
  auto index = [&](int32_t from) -> int32_t {
    from = std::clamp(from, 0, num_ops - 1);
    switch (rng() % 8) {
      case 0:
        return -1;  // unset
      case 1:
        return static_cast<int32_t>(rng() % 4) - 5;  // negative, ten bytes
      case 2:
        return num_ops + static_cast<int32_t>(rng() % 3);
      default:
        return from + static_cast<int32_t>(rng() % (num_ops - from));
    }
  };
  FixedTransferSpec x;
  x.name = rng() % 3 == 0 ? std::string() : "x" + std::to_string(rng() % 999);
  x.direction = rng() % 16 == 0  ? static_cast<Direction>(2 + rng() % 3)
                : rng() % 2 == 0 ? Direction::kD2H
                                 : Direction::kH2D;
  x.size_bytes = rng() % 16 == 0 ? -static_cast<int64_t>(rng() % 100)
                                 : static_cast<int64_t>(rng() % (1 << 30));
  x.after_op = rng() % 2 == 0 ? -1 : index(0);
  x.before_op = rng() % 2 == 0 ? -1 : index(x.after_op + 1);
  x.gpu_bytes = rng() % 2 == 0 ? 0 : static_cast<int64_t>(rng() % 4096);
  if (x.direction == Direction::kH2D && x.gpu_bytes > 0)
    x.release_op = rng() % 8 == 0 ? -1 : index(x.before_op);
  else if (rng() % 16 == 0)
    x.release_op = index(0);
  return x;
}

// Fixed transfers, valid and invalid, with their optional indices set,
// unset, zero and negative: the spec, its message and its bytes agree, and
// SerializedBytes counts each field as protobuf writes it.
TEST(TraceConvertTest, FixedTransfersAgreeInEveryForm) {
  std::mt19937_64 rng(30);
  int valid = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    SCOPED_TRACE(seed);
    TraceSpec spec = RandomSmallTrace(seed).trace;
    const int32_t num_ops = static_cast<int32_t>(spec.operators.size());
    const int count = static_cast<int>(rng() % 5);
    for (int i = 0; i < count; ++i)
      spec.fixed_transfers.push_back(RandomFixedTransfer(rng, num_ops));
    ExpectFormsAgree(spec);
    valid += ValidateTrace(spec).ok() ? 1 : 0;
  }
  EXPECT_GT(valid, 30);  // both outcomes are exercised
  EXPECT_LT(valid, 270);
  // Explicit zeros: an index of 0 is written, an unset one is not.
  TraceSpec spec = RandomSmallTrace(1).trace;
  FixedTransferSpec zero;
  zero.direction = Direction::kH2D;
  zero.after_op = 0;
  spec.fixed_transfers = {zero, FixedTransferSpec()};
  ExpectFormsAgree(spec);
  const v1::Trace proto = TraceSpecToProto(spec);
  EXPECT_TRUE(proto.fixed_transfers(0).has_after_op());
  EXPECT_FALSE(proto.fixed_transfers(0).has_before_op());
  EXPECT_FALSE(proto.fixed_transfers(1).has_after_op());
}

TEST(TraceConvertTest, EnumsMapBothWays) {
  for (Phase p : {Phase::kForward, Phase::kBackward, Phase::kOptimizer})
    EXPECT_EQ(PhaseFromProto(PhaseToProto(p)), p);
  EXPECT_FALSE(PhaseFromProto(v1::PHASE_UNSPECIFIED).has_value());
  EXPECT_FALSE(PhaseFromProto(static_cast<v1::Phase>(9)).has_value());
  for (int k = 0; k <= static_cast<int>(OpKind::kOptimizer); ++k) {
    const OpKind kind = static_cast<OpKind>(k);
    EXPECT_EQ(KindFromProto(KindToProto(kind)), kind) << k;
  }
  EXPECT_EQ(KindToProto(OpKind::kOther), v1::OP_KIND_OTHER);
  EXPECT_EQ(KindFromProto(v1::OP_KIND_UNSPECIFIED), OpKind::kOther);
  EXPECT_FALSE(KindFromProto(static_cast<v1::OpKind>(12)).has_value());
  for (Direction d : {Direction::kD2H, Direction::kH2D})
    EXPECT_EQ(DirectionFromProto(DirectionToProto(d)), d);
  EXPECT_EQ(DirectionToProto(Direction::kD2H), v1::DIRECTION_D2H);
  EXPECT_FALSE(DirectionFromProto(v1::DIRECTION_UNSPECIFIED).has_value());
  EXPECT_FALSE(DirectionFromProto(static_cast<v1::Direction>(3)).has_value());
}

}  // namespace
}  // namespace slackswap
