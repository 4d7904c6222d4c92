// File: offload_traffic.h
//
// The host-link traffic a training job makes itself when it keeps optimizer
// state or parameters in host memory: the generator's offload modes. Each
// mode adds fixed transfers (trace.h) to a generated trace, one set per unit
// (a transformer layer, or a VGG-16 conv or fc layer), sized by the unit's
// parameters at the training precision. docs/workloads.md ("Offload modes")
// states the parameter formulas, each mode's transfers and why.
//
// Example:
//   WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
//   spec.offload = Offload::kFsdpCpu;
//   absl::StatusOr<TraceSpec> trace = GenerateTrace(spec, hardware);
//   // trace->fixed_transfers: per layer a forward and a backward parameter
//   // fetch (H2D) and a gradient copy (D2H).
#ifndef SLACKSWAP_SIMULATOR_OFFLOAD_TRAFFIC_H_
#define SLACKSWAP_SIMULATOR_OFFLOAD_TRAFFIC_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "simulator/trace_spec.h"

namespace slackswap {

struct WorkloadSpec;  // workload.h

enum class Offload {
  kNone,     // the link carries only the plan's copies
  kZero,     // ZeRO-Offload (stage 2): CPU optimizer after the backward pass
  kZeroDpu,  // ZeRO-Offload with delayed parameter update
  kFsdpCpu,  // FSDP, CPUOffload(offload_params=True), one unit per layer
};

// "none", "zero", "zero-dpu", "fsdp-cpu"; OffloadFromName is the inverse
// (nullopt for any other name). The wire form's mapping is in
// service/wire_convert.h.
const char* OffloadName(Offload offload);
std::optional<Offload> OffloadFromName(absl::string_view name);

// A unit of the model as the offload modes move it: the blocks it spans
// (operator block_index, inclusive) and its parameter count.
struct OffloadUnit {
  std::string name;  // "layer3", "conv1", "fc6"
  int32_t first_block = 0;
  int32_t last_block = 0;
  int64_t parameters = 0;
};

// The units of `spec`'s model, in forward order: per transformer layer one
// (the first also holds the embedding, block 0; the last the head, block
// layers + 1), per VGG-16 conv or fc layer one (the input, block 0, holds
// no parameters and is in none). Counts follow docs/workloads.md and are
// exact for parameters within [0, 2^60]; spec's dimensions must be those
// GenerateTrace accepts.
std::vector<OffloadUnit> OffloadUnits(const WorkloadSpec& spec);

// Bytes per parameter, and per gradient element, at `spec`'s precision: 2
// for bf16 and fp16, 4 for fp32.
int64_t ParameterBytes(const WorkloadSpec& spec);

// Appends to `trace` (generated from `spec` by the workload generator) the
// fixed transfers of spec.offload; nothing for Offload::kNone. Each unit's
// first and last forward and backward operators are found by block_index.
// INVALID_ARGUMENT ("workload.offload") when the transfers' bytes, or their
// sum, would pass 2^60; `trace` is then unchanged. O(operators + units).
absl::Status AddOffloadTraffic(const WorkloadSpec& spec, TraceSpec& trace);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_OFFLOAD_TRAFFIC_H_
