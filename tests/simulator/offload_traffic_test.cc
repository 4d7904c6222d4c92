// The generator's offload modes: the transfers each adds, their operators
// (found here from the operators' names and blocks) and their sizes (from the
// parameter formulas of docs/workloads.md, computed here from h).
#include "simulator/offload_traffic.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/field_violations.h"
#include "gtest/gtest.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

// GPT-2 XL with two layers: h 1600, f 6400, vocabulary 50257, 1024 tokens.
WorkloadSpec TwoLayerGpt(Offload offload) {
  WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
  spec.layers = 2;
  spec.offload = offload;
  return spec;
}

TraceSpec Generate(const WorkloadSpec& spec) {
  absl::StatusOr<TraceSpec> trace =
      GenerateTrace(spec, *HardwarePreset("a100"));
  EXPECT_TRUE(trace.ok()) << trace.status();
  return trace.ok() ? *trace : TraceSpec();
}

// Every field of the operators and tensors, as text.
std::string Dump(const TraceSpec& trace) {
  std::string out;
  for (const OperatorSpec& op : trace.operators) {
    absl::StrAppend(&out, op.name, " ", static_cast<int>(op.phase), " ",
                    static_cast<int>(op.kind), " ", op.duration_ns, " ",
                    op.block_index, " ", op.workspace_bytes, " ", op.flops, " ",
                    op.memory_traffic_bytes, "\n");
  }
  for (const TensorSpec& t : trace.tensors) {
    absl::StrAppend(&out, t.name, " ", t.size_bytes, " ", t.producer_op, " ",
                    absl::StrJoin(t.use_ops, ","), " ", t.recompute_duration_ns,
                    " ", absl::StrJoin(t.recompute_inputs, ","), " ",
                    t.swap_forbidden, t.recompute_forbidden, "\n");
  }
  return out;
}

int32_t OpNamed(const TraceSpec& trace, const std::string& name) {
  for (size_t i = 0; i < trace.operators.size(); ++i) {
    if (trace.operators[i].name == name) return static_cast<int32_t>(i);
  }
  ADD_FAILURE() << "no operator " << name;
  return -2;
}

const FixedTransferSpec* Named(const TraceSpec& trace,
                               const std::string& name) {
  for (const FixedTransferSpec& x : trace.fixed_transfers) {
    if (x.name == name) return &x;
  }
  ADD_FAILURE() << "no fixed transfer " << name;
  return nullptr;
}

// The two units of TwoLayerGpt: their operators and parameter bytes.
struct Unit {
  std::string name;
  int32_t first_forward, last_forward, first_backward, last_backward;
  int64_t bytes;
};

std::vector<Unit> ExpectedUnits(const TraceSpec& trace) {
  const int64_t h = 1600, V = 50257, s = 1024;
  const int64_t layer = 12 * h * h + 13 * h;
  // Layer 0 also holds the token and position embeddings (block 0), layer 1
  // the final LayerNorm (block 3; the LM head is tied to the embedding).
  return {
      {"layer0", OpNamed(trace, "embedding"),
       OpNamed(trace, "layer0.dropout2_residual"),
       OpNamed(trace, "layer0.dropout2_residual.backward"),
       OpNamed(trace, "embedding.backward"), 2 * (layer + (V + s) * h)},
      {"layer1", OpNamed(trace, "layer1.layernorm1"),
       OpNamed(trace, "cross_entropy"),
       OpNamed(trace, "cross_entropy.backward"),
       OpNamed(trace, "layer1.layernorm1.backward"), 2 * (layer + 2 * h)},
  };
}

TEST(OffloadTrafficTest, NamesRoundTrip) {
  for (Offload o :
       {Offload::kNone, Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    EXPECT_EQ(OffloadFromName(OffloadName(o)), o);
  }
  EXPECT_EQ(std::string(OffloadName(Offload::kZeroDpu)), "zero-dpu");
  EXPECT_EQ(std::string(OffloadName(Offload::kFsdpCpu)), "fsdp-cpu");
  EXPECT_FALSE(OffloadFromName("bogus").has_value());
  EXPECT_FALSE(OffloadFromName("").has_value());
}

TEST(OffloadTrafficTest, UnitOpsFollowTheBlocks) {
  const TraceSpec trace = Generate(TwoLayerGpt(Offload::kNone));
  const std::vector<Unit> units = ExpectedUnits(trace);
  // The names above are each block range's first and last op by index.
  for (int u = 0; u < 2; ++u) {
    const int32_t lo = u == 0 ? 0 : 2, hi = u == 0 ? 1 : 3;
    int32_t ff = -1, lf = -1, fb = -1, lb = -1;
    for (size_t i = 0; i < trace.operators.size(); ++i) {
      const OperatorSpec& op = trace.operators[i];
      if (op.block_index < lo || op.block_index > hi) continue;
      const int32_t o = static_cast<int32_t>(i);
      int32_t& first = op.phase == Phase::kForward ? ff : fb;
      int32_t& last = op.phase == Phase::kForward ? lf : lb;
      if (first < 0) first = o;
      last = o;
    }
    EXPECT_EQ(units[u].first_forward, ff) << u;
    EXPECT_EQ(units[u].last_forward, lf) << u;
    EXPECT_EQ(units[u].first_backward, fb) << u;
    EXPECT_EQ(units[u].last_backward, lb) << u;
  }
}

TEST(OffloadTrafficTest, NoneLeavesTheTraceAsItWas) {
  const TraceSpec none = Generate(TwoLayerGpt(Offload::kNone));
  EXPECT_TRUE(none.fixed_transfers.empty());
  EXPECT_FALSE(absl::StrContains(none.name, "offload"));
  EXPECT_EQ(none.name, "gpt2-xl batch 8 seq 1024 layers 2 bf16 flash on a100");
  // The modes only append transfers (and name the mode).
  for (Offload o : {Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    const TraceSpec with = Generate(TwoLayerGpt(o));
    EXPECT_EQ(Dump(with), Dump(none)) << OffloadName(o);
    EXPECT_EQ(with.name, absl::StrCat(none.name, " offload ", OffloadName(o)));
    EXPECT_FALSE(with.fixed_transfers.empty());
  }
}

TEST(OffloadTrafficTest, ZeroCopiesGradientsOutAndParametersBackAtTheEnd) {
  const TraceSpec trace = Generate(TwoLayerGpt(Offload::kZero));
  ASSERT_EQ(trace.fixed_transfers.size(), 4u);
  const int32_t last_op = static_cast<int32_t>(trace.operators.size()) - 1;
  for (const Unit& u : ExpectedUnits(trace)) {
    const FixedTransferSpec* grad = Named(trace, u.name + ".grad");
    ASSERT_NE(grad, nullptr);
    EXPECT_EQ(grad->direction, Direction::kD2H);
    EXPECT_EQ(grad->size_bytes, u.bytes);
    EXPECT_EQ(grad->after_op, u.last_backward);
    EXPECT_EQ(grad->before_op, -1);
    EXPECT_EQ(grad->gpu_bytes, u.bytes);
    EXPECT_EQ(grad->release_op, -1);
    const FixedTransferSpec* params = Named(trace, u.name + ".params");
    ASSERT_NE(params, nullptr);
    EXPECT_EQ(params->direction, Direction::kH2D);
    EXPECT_EQ(params->size_bytes, u.bytes);
    EXPECT_EQ(params->after_op, last_op);
    EXPECT_EQ(params->before_op, -1);
    EXPECT_EQ(params->gpu_bytes, 0);
    EXPECT_EQ(params->release_op, -1);
  }
}

TEST(OffloadTrafficTest, DelayedUpdateOverlapsParametersWithTheForward) {
  const TraceSpec trace = Generate(TwoLayerGpt(Offload::kZeroDpu));
  ASSERT_EQ(trace.fixed_transfers.size(), 4u);
  for (const Unit& u : ExpectedUnits(trace)) {
    const FixedTransferSpec* grad = Named(trace, u.name + ".grad");
    ASSERT_NE(grad, nullptr);
    EXPECT_EQ(grad->direction, Direction::kD2H);
    EXPECT_EQ(grad->size_bytes, u.bytes);
    EXPECT_EQ(grad->after_op, u.last_backward);
    EXPECT_EQ(grad->gpu_bytes, u.bytes);
    const FixedTransferSpec* params = Named(trace, u.name + ".params");
    ASSERT_NE(params, nullptr);
    EXPECT_EQ(params->direction, Direction::kH2D);
    EXPECT_EQ(params->size_bytes, u.bytes);
    EXPECT_EQ(params->after_op, -1);
    EXPECT_EQ(params->before_op, u.first_forward);
    EXPECT_EQ(params->gpu_bytes, 0);
    EXPECT_EQ(params->release_op, -1);
  }
}

TEST(OffloadTrafficTest, FsdpFetchesEachUnitTwiceAndCopiesItsGradients) {
  const TraceSpec trace = Generate(TwoLayerGpt(Offload::kFsdpCpu));
  ASSERT_EQ(trace.fixed_transfers.size(), 6u);
  const std::vector<Unit> units = ExpectedUnits(trace);
  const int32_t last_forward = OpNamed(trace, "cross_entropy");
  for (int u = 0; u < 2; ++u) {
    const Unit& unit = units[u];
    const FixedTransferSpec* fwd = Named(trace, unit.name + ".params.fwd");
    ASSERT_NE(fwd, nullptr);
    EXPECT_EQ(fwd->direction, Direction::kH2D);
    EXPECT_EQ(fwd->size_bytes, unit.bytes);
    EXPECT_EQ(fwd->after_op, u == 0 ? -1 : units[0].first_forward);
    EXPECT_EQ(fwd->before_op, unit.first_forward);
    EXPECT_EQ(fwd->gpu_bytes, unit.bytes);
    EXPECT_EQ(fwd->release_op, unit.last_forward);
    const FixedTransferSpec* bwd = Named(trace, unit.name + ".params.bwd");
    ASSERT_NE(bwd, nullptr);
    EXPECT_EQ(bwd->direction, Direction::kH2D);
    EXPECT_EQ(bwd->size_bytes, unit.bytes);
    EXPECT_EQ(bwd->after_op, u == 0 ? units[1].first_backward : last_forward);
    EXPECT_EQ(bwd->before_op, unit.first_backward);
    EXPECT_EQ(bwd->gpu_bytes, unit.bytes);
    EXPECT_EQ(bwd->release_op, unit.last_backward);
    const FixedTransferSpec* grad = Named(trace, unit.name + ".grad");
    ASSERT_NE(grad, nullptr);
    EXPECT_EQ(grad->direction, Direction::kD2H);
    EXPECT_EQ(grad->size_bytes, unit.bytes);
    EXPECT_EQ(grad->after_op, unit.last_backward);
    EXPECT_EQ(grad->before_op, -1);
    EXPECT_EQ(grad->gpu_bytes, unit.bytes);
  }
}

// Replayed with every activation kept and memory unlimited, ZeRO's
// parameter copies start when the last op ends and run back to back on the
// H2D stream (they outlast the gradient copies): the iteration ends when the
// last has arrived.
TEST(OffloadTrafficTest, ZeroIterationEndsWhenTheParametersHaveArrived) {
  const Hardware a100 = *HardwarePreset("a100");
  const TraceSpec spec = Generate(TwoLayerGpt(Offload::kZero));
  absl::StatusOr<Trace> trace = ValidateTrace(spec);
  ASSERT_TRUE(trace.ok()) << trace.status();
  ASSERT_EQ(trace->num_fixed_transfers(), 4);
  int64_t copies_ns = 0;
  for (const FixedTransferSpec& x : spec.fixed_transfers) {
    if (x.direction != Direction::kH2D) continue;
    copies_ns += TransferNs(x.size_bytes, a100.h2d_bytes_per_second,
                            a100.transfer_latency_ns);
  }
  absl::StatusOr<SimulationResult> result =
      Simulate(*trace, a100, Plan::AllKeep(*trace), SimulationOptions());
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->feasible);
  EXPECT_EQ(result->iteration_ns, trace->ideal_ns + copies_ns);
}

// Every mode on every preset gives a trace the validation accepts, with as
// many transfers per unit as the mode moves.
TEST(OffloadTrafficTest, EveryModeOnEveryPresetValidates) {
  for (const std::string& preset : WorkloadPresetNames()) {
    WorkloadSpec spec = *WorkloadPreset(preset);
    if (spec.family != ModelFamily::kVgg16) spec.layers = 3;
    const size_t units = OffloadUnits(spec).size();
    for (Offload o : {Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
      spec.offload = o;
      const TraceSpec trace = Generate(spec);
      EXPECT_EQ(trace.fixed_transfers.size(),
                (o == Offload::kFsdpCpu ? 3 : 2) * units)
          << preset << " " << OffloadName(o);
      absl::StatusOr<Trace> valid = ValidateTrace(trace);
      EXPECT_TRUE(valid.ok())
          << preset << " " << OffloadName(o) << ": " << valid.status();
    }
  }
}

// Whole-model counts against the published ones: GPT-2 XL 1.558B (tied LM
// head), Llama-7B 6.738B, VGG-16 138.36M, BERT-large ~335M (its MLM head's
// transform and the token-type embeddings are not modelled: 334.1M).
TEST(OffloadTrafficTest, ModelParameterCountsMatchThePublishedOnes) {
  auto total = [](const std::string& preset) {
    int64_t sum = 0;
    for (const OffloadUnit& u : OffloadUnits(*WorkloadPreset(preset)))
      sum += u.parameters;
    return sum;
  };
  EXPECT_EQ(total("gpt2-xl"), 1557611200);
  EXPECT_EQ(total("llama-7b"), 6738415616);
  EXPECT_EQ(total("vgg16"), 138357544);
  EXPECT_NEAR(static_cast<double>(total("bert-large")), 335e6, 2e6);
  EXPECT_EQ(OffloadUnits(*WorkloadPreset("vgg16")).size(), 16u);
  EXPECT_EQ(OffloadUnits(*WorkloadPreset("gpt2-xl")).size(), 48u);
}

TEST(OffloadTrafficTest, Fp32MovesFourBytesPerParameter) {
  WorkloadSpec spec = TwoLayerGpt(Offload::kZero);
  const TraceSpec bf16 = Generate(spec);
  spec.precision = Precision::kFp32;
  const TraceSpec fp32 = Generate(spec);
  const int64_t h = 1600;
  EXPECT_EQ(Named(bf16, "layer1.grad")->size_bytes, 2 * (12 * h * h + 15 * h));
  EXPECT_EQ(Named(fp32, "layer1.grad")->size_bytes, 4 * (12 * h * h + 15 * h));
}

}  // namespace
}  // namespace slackswap
