// The trace's wire conversions: a generated TraceSpec, its message and the
// message's bytes all validate to the same compact trace (or the same error),
// the serialized size is computed exactly without protobuf, and the enums map
// both ways.
#include "service/trace_convert.h"

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
}

}  // namespace
}  // namespace slackswap
