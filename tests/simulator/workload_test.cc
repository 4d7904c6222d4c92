// The generator against the figures of SPEC section 5 and the structure of
// each layer's dataflow.
#include "simulator/workload.h"

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

#include "absl/strings/match.h"
#include "base/field_violations.h"
#include "gtest/gtest.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"

namespace slackswap {
namespace {

TraceSpec GenerateSpec(const WorkloadSpec& spec, const std::string& hardware) {
  absl::StatusOr<TraceSpec> trace =
      GenerateTrace(spec, *HardwarePreset(hardware));
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : TraceSpec();
}

WorkloadSpec Preset(const std::string& name) { return *WorkloadPreset(name); }

// Saved bytes of the tensors whose name starts with "layer<i>." (the tensors
// a layer produces; its input is the previous layer's output).
int64_t LayerBytes(const TraceSpec& trace, int layer) {
  int64_t bytes = 0;
  for (const TensorSpec& t : trace.tensors) {
    if (absl::StartsWith(t.name, absl::StrCat("layer", layer, ".")))
      bytes += t.size_bytes;
  }
  return bytes;
}

TEST(WorkloadCalibrationTest, Gpt2XlOnA100MatchesThePaper) {
  const Hardware a100 = *HardwarePreset("a100");
  const TraceSummary s =
      Summarize(GenerateSpec(Preset("gpt2-xl"), "a100"), a100);
  EXPECT_NEAR(static_cast<double>(s.saved_bytes) / 1e9, 22.0, 2.2);
  EXPECT_NEAR(s.flops_per_saved_byte, 1200, 120);
  EXPECT_NEAR(s.hideable_fraction, 0.15, 0.015);
  EXPECT_NEAR(static_cast<double>(s.iteration_ns) / 1e6, 399, 39.9);
  // The machine ratio beta (sustained FLOP/s per link byte/s) within the
  // paper's 5,900-8,800 for the A100.
  const double beta = static_cast<double>(a100.matmul_flops_per_second) /
                      static_cast<double>(a100.d2h_bytes_per_second);
  EXPECT_GE(beta, 5900);
  EXPECT_LE(beta, 8800);
}

TEST(WorkloadCalibrationTest, LlamaHideableFractionRisesWithSequenceLength) {
  const Hardware a100 = *HardwarePreset("a100");
  double previous = 0;
  for (int64_t seq : {2048, 4096, 8192, 16384, 32768}) {
    WorkloadSpec spec = Preset("llama-7b");
    spec.sequence_length = seq;
    const double hideable =
        Summarize(GenerateSpec(spec, "a100"), a100).hideable_fraction;
    EXPECT_GT(hideable, previous) << seq;
    previous = hideable;
    if (seq == 2048) {
      EXPECT_NEAR(hideable, 0.36, 0.08);
    }
    if (seq == 32768) {
      EXPECT_NEAR(hideable, 0.60, 0.08);
    }
  }
}

TEST(WorkloadCalibrationTest, Vgg16IsFullyHideableOnATitanXButNotOnAnA100) {
  const Hardware titan = *HardwarePreset("titan-x");
  EXPECT_GE(Summarize(GenerateSpec(Preset("vgg16"), "titan-x"), titan)
                .hideable_fraction,
            1.0);
  const Hardware a100 = *HardwarePreset("a100");
  EXPECT_LT(
      Summarize(GenerateSpec(Preset("vgg16"), "a100"), a100).hideable_fraction,
      0.5);
}

TEST(WorkloadCalibrationTest, RecomputeCostsPerByteOnA100) {
  // Tensors rebuilt by their producer alone cost 1-11 ps per byte (SPEC
  // section 5). Dropout masks are regenerated from the saved random state,
  // one byte written per element: cheaper, but not below the paper's
  // cheapest rebuild (87x less than a 40 ps/B exposed copy, 0.46 ps/B). A
  // layer's residual outputs also rerun the matmul before them (its output is
  // not saved): dearer, but still below an exposed PCIe 4.0 copy at 40 ps/B.
  const TraceSpec trace = GenerateSpec(Preset("gpt2-xl"), "a100");
  int checked = 0;
  for (const TensorSpec& t : trace.tensors) {
    if (t.recompute_forbidden || t.name == "embedding_out") continue;
    const double ps_per_byte = 1e3 *
                               static_cast<double>(t.recompute_duration_ns) /
                               static_cast<double>(t.size_bytes);
    const bool residual = absl::StrContains(t.name, "residual1_out") ||
                          absl::EndsWith(t.name, ".out");
    if (residual) {
      EXPECT_LT(ps_per_byte, 40) << t.name;
    } else if (absl::EndsWith(t.name, "_mask")) {
      EXPECT_GE(ps_per_byte, 0.46) << t.name;
      EXPECT_LT(ps_per_byte, 1.0) << t.name;
    } else {
      EXPECT_GE(ps_per_byte, 1.0) << t.name;
      EXPECT_LE(ps_per_byte, 11.0) << t.name;
    }
    ++checked;
  }
  EXPECT_GT(checked, 400);
}

TEST(WorkloadStructureTest, GptLayerSaves34BytesPerTokenPerHiddenUnit) {
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.layers = 3;
  const TraceSpec trace = GenerateSpec(spec, "a100");
  const int64_t tokens = spec.batch * spec.sequence_length;
  // Each layer produces its 34h per token minus its input (2h), plus its
  // output (2h, the next layer's input).
  for (int layer = 0; layer < 3; ++layer) {
    EXPECT_EQ(LayerBytes(trace, layer), 34 * spec.hidden * tokens) << layer;
  }
}

TEST(WorkloadStructureTest, UnfusedAttentionAdds5asBytesPerToken) {
  WorkloadSpec spec = Preset("bert-large");
  spec.layers = 2;
  const int64_t flash = LayerBytes(GenerateSpec(spec, "a100"), 1);
  spec.flash_attention = false;
  const int64_t unfused = LayerBytes(GenerateSpec(spec, "a100"), 1);
  const int64_t tokens = spec.batch * spec.sequence_length;
  EXPECT_EQ(unfused - flash,
            int64_t{5} * spec.heads * spec.sequence_length * tokens);
}

TEST(WorkloadStructureTest, LlamaLayerSaves16hPlus6fBytesPerToken) {
  WorkloadSpec spec = Preset("llama-7b");
  spec.layers = 2;
  const TraceSpec trace = GenerateSpec(spec, "a100");
  EXPECT_EQ(LayerBytes(trace, 1),
            (16 * spec.hidden + 6 * spec.ffn_hidden) * spec.sequence_length);
}

TEST(WorkloadStructureTest, BackwardOpsTakeTwiceTheirForwardOp) {
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.layers = 1;
  const TraceSpec trace = GenerateSpec(spec, "a100");
  for (const OperatorSpec& bwd : trace.operators) {
    if (bwd.phase != Phase::kBackward) continue;
    const std::string forward_name = bwd.name.substr(0, bwd.name.size() - 9);
    for (const OperatorSpec& fwd : trace.operators) {
      if (fwd.name != forward_name) continue;
      const double factor = fwd.kind == OpKind::kAttention ? 2.5
                            : fwd.kind == OpKind::kLoss    ? 1.0
                                                           : 2.0;
      EXPECT_NEAR(static_cast<double>(bwd.duration_ns),
                  factor * static_cast<double>(fwd.duration_ns), 2.0)
          << bwd.name;
    }
  }
}

TEST(WorkloadStructureTest, EveryPresetOnEveryGpuIsAValidTrace) {
  for (const std::string& preset : WorkloadPresetNames()) {
    for (const std::string& hardware : HardwarePresetNames()) {
      WorkloadSpec spec = Preset(preset);
      if (spec.layers > 2) spec.layers = 2;
      absl::StatusOr<TraceSpec> trace =
          GenerateTrace(spec, *HardwarePreset(hardware));
      ASSERT_TRUE(trace.ok())
          << preset << " on " << hardware << ": " << trace.status();
      EXPECT_TRUE(ValidateTrace(*trace).ok());
    }
  }
}

TEST(WorkloadStructureTest, RejectsBadParametersNamingTheField) {
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.batch = 0;
  absl::Status status = GenerateTrace(spec, *HardwarePreset("a100")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(status.message(), "workload.batch")) << status;
  Hardware no_rates = *HardwarePreset("a100");
  no_rates.matmul_flops_per_second = 0;
  status = GenerateTrace(Preset("gpt2-xl"), no_rates).status();
  EXPECT_TRUE(
      absl::StartsWith(status.message(), "hardware.matmul_flops_per_second"))
      << status;
  EXPECT_EQ(WorkloadPreset("gpt-5").status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_EQ(HardwarePreset("tpu").status().code(), absl::StatusCode::kNotFound);
}

// 100,000 layers took 822 MB and then failed the trace limits. The size is
// bounded before anything is built, and the error says how many layers fit.
TEST(WorkloadStructureTest, RejectsTracesOverTheSizeLimitBeforeBuildingThem) {
  for (const std::string preset : {"gpt2-xl", "llama-7b", "bert-large"}) {
    SCOPED_TRACE(preset);
    WorkloadSpec spec = Preset(preset);
    spec.layers = 100000;
    const absl::Status status =
        GenerateTrace(spec, *HardwarePreset("a100")).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
    ASSERT_FALSE(FieldViolationsOf(status).empty()) << status;
    EXPECT_EQ(FieldViolationsOf(status)[0].field, "workload.layers");
    EXPECT_TRUE(absl::StrContains(status.message(), "layers of this model"))
        << status;
  }
  // 50 times GPT-2 XL's layers is well inside the limit, and the estimate
  // that bounds it is an upper bound of the real size.
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.layers = 48 * 50;
  absl::StatusOr<TraceSpec> large =
      GenerateTrace(spec, *HardwarePreset("a100"));
  ASSERT_TRUE(large.ok()) << large.status();
  EXPECT_LT(SerializedBytes(*large), kMaxGeneratedTraceBytes);
}

// The error's "about N layers" is close: a little under N builds a trace
// within the limit, a little over is refused (by the estimate or, should it
// fall short, by the built size).
TEST(WorkloadStructureTest, SuggestedLayerCountIsCloseToTheLimit) {
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.layers = 100000;
  const absl::Status status =
      GenerateTrace(spec, *HardwarePreset("a100")).status();
  ASSERT_EQ(status.code(), absl::StatusCode::kResourceExhausted) << status;
  const std::string message(status.message());
  const size_t about = message.find("about ");
  ASSERT_NE(about, std::string::npos) << message;
  const int suggested = std::atoi(message.c_str() + about + 6);
  ASSERT_GT(suggested, 48) << message;

  spec.layers = suggested * 97 / 100;
  absl::StatusOr<TraceSpec> under =
      GenerateTrace(spec, *HardwarePreset("a100"));
  ASSERT_TRUE(under.ok()) << under.status();
  EXPECT_LE(SerializedBytes(*under), kMaxGeneratedTraceBytes);
  spec.layers = suggested * 103 / 100;
  EXPECT_EQ(GenerateTrace(spec, *HardwarePreset("a100")).status().code(),
            absl::StatusCode::kResourceExhausted);
}

// Batch 65536 with 2^22 tokens per sequence passes every per-field range but
// made durations and FLOPs overflow int64 (undefined double-to-int64
// conversions, then wrapped sums in Summarize).
TEST(WorkloadStructureTest, RejectsParametersWhoseSizesWouldOverflow) {
  WorkloadSpec spec = Preset("gpt2-xl");
  spec.layers = 2;
  spec.batch = 65536;
  spec.sequence_length = 1 << 22;
  const absl::Status status =
      GenerateTrace(spec, *HardwarePreset("a100")).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << status;
  const std::vector<FieldViolation> v = FieldViolationsOf(status);
  ASSERT_EQ(v.size(), 2u) << status;
  EXPECT_EQ(v[0].field, "workload.batch");
  EXPECT_EQ(v[1].field, "workload.sequence_length");

  // VGG-16 at its largest batch and image stays within range: no false alarm.
  WorkloadSpec vgg = Preset("vgg16");
  vgg.batch = 65536;
  vgg.image_size = 4096;
  EXPECT_TRUE(GenerateTrace(vgg, *HardwarePreset("titan-x")).ok());

  // Summarize saturates instead of wrapping, whatever the trace holds.
  TraceSpec huge;
  for (int i = 0; i < 4; ++i) {
    OperatorSpec& op = huge.operators.emplace_back();
    op.phase = Phase::kForward;
    op.duration_ns = std::numeric_limits<int64_t>::max();
    op.flops = std::numeric_limits<int64_t>::max();
  }
  const TraceSummary s = Summarize(huge, *HardwarePreset("a100"));
  EXPECT_EQ(s.forward_flops, std::numeric_limits<int64_t>::max());
  EXPECT_EQ(s.iteration_ns, std::numeric_limits<int64_t>::max());
}

}  // namespace
}  // namespace slackswap
