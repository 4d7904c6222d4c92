// File: workload.h
//
// The workload generator: builds a realistic one-iteration trace from a model
// preset, batch, sequence length, precision and hardware preset, for users
// without a profiler, for the tests and for reproducing the paper. Every
// formula and constant, and the calibration against published figures, is in
// docs/workloads.md.
//
// Operator durations follow a roofline: max(FLOPs / sustained matmul rate,
// bytes moved / sustained HBM rate). Backward operators do twice the work of
// their forward operator (FlashAttention backward 2.5x). Saved tensors,
// their uses and their recompute inputs follow the real dataflow of each
// layer (for a GPT layer: 34 bytes per token per hidden unit, as broken down by
// Korthikanti et al.).
//
// Example:
//   WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
//   spec.batch = 4;
//   absl::StatusOr<TraceSpec> trace = GenerateTrace(spec,
//   *HardwarePreset("a100"));
//   absl::StatusOr<Trace> compact = ValidateTrace(*trace);
#ifndef SLACKSWAP_SIMULATOR_WORKLOAD_H_
#define SLACKSWAP_SIMULATOR_WORKLOAD_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "simulator/hardware.h"
#include "simulator/offload_traffic.h"
#include "simulator/trace_spec.h"

namespace slackswap {

enum class ModelFamily {
  kGpt,    // pre-LayerNorm, GeLU MLP (4h), dropout after attention and MLP
  kLlama,  // RMSNorm, fused QKV with RoPE, SwiGLU MLP, no dropout
  kVgg16,  // 13 conv + 3 fc layers on 224x224 images
};

enum class Precision { kBf16, kFp16, kFp32 };

// "bf16", "fp16", "fp32"; PrecisionFromName is the inverse (nullopt for any
// other name). The wire form's mapping is in service/wire_convert.h.
const char* PrecisionName(Precision p);
std::optional<Precision> PrecisionFromName(absl::string_view name);

struct WorkloadSpec {
  std::string preset;  // the preset this spec started from
  ModelFamily family = ModelFamily::kGpt;
  int32_t layers = 0;  // transformer layers (ignored for VGG-16)
  int64_t hidden = 0;  // h
  int32_t heads = 0;   // a
  int64_t ffn_hidden = 0;
  int64_t vocabulary = 0;
  bool causal = false;  // causal attention: FlashAttention skips masked blocks
  int64_t batch = 1;
  int64_t sequence_length = 0;  // s (transformers)
  int64_t image_size = 224;     // VGG-16
  Precision precision = Precision::kBf16;
  bool flash_attention = true;
  // Host-link traffic the job makes itself (offload_traffic.h).
  Offload offload = Offload::kNone;
};

// Names accepted by WorkloadPreset: "bert-large", "gpt2-xl", "llama-7b",
// "vgg16".
const std::vector<std::string>& WorkloadPresetNames();

// The preset's default spec; NOT_FOUND listing the valid names otherwise.
absl::StatusOr<WorkloadSpec> WorkloadPreset(absl::string_view name);

// Largest trace the generator builds (serialized), so that a generated trace
// fits a response with room to spare and building it takes bounded memory.
inline constexpr int kMaxGeneratedTraceBytes = 24 << 20;

// Builds the trace. INVALID_ARGUMENT (field path "workload.<field>") for
// parameters out of range, or whose sizes and times would overflow;
// RESOURCE_EXHAUSTED ("workload.layers") when the trace would exceed
// kMaxGeneratedTraceBytes or the trace limits, found before it is built. The
// hardware must have positive matmul and HBM rates
// ("hardware.matmul_flops_per_second", "hardware.hbm_bytes_per_second").
absl::StatusOr<TraceSpec> GenerateTrace(const WorkloadSpec& spec,
                                        const Hardware& hardware);

// Figures the generator is calibrated against (docs/workloads.md).
struct TraceSummary {
  int64_t saved_bytes = 0;
  int64_t forward_flops = 0;
  int64_t forward_ns = 0;
  int64_t iteration_ns = 0;  // ideal: sum of durations
  // forward FLOPs per saved byte (the paper's I)
  double flops_per_saved_byte = 0;
  // bytes the D2H link can move during the forward pass / saved bytes
  double hideable_fraction = 0;
};
// Sums saturate at the int64 range (any trace, valid or not).
TraceSummary Summarize(const TraceSpec& trace, const Hardware& hardware);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_WORKLOAD_H_
