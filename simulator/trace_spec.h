// File: trace_spec.h
//
// A trace as it is recorded, before validation: what the workload generator
// and the random small traces build, and what the service turns into the wire
// form (slackswap.v1.Trace, field for field). ValidateTrace
// (trace_validation.h) checks every rule of docs/event-model.md and builds the
// compact Trace from it.
#ifndef SLACKSWAP_SIMULATOR_TRACE_SPEC_H_
#define SLACKSWAP_SIMULATOR_TRACE_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "simulator/trace.h"

namespace slackswap {

struct OperatorSpec {
  std::string name;
  Phase phase = Phase::kForward;
  OpKind kind = OpKind::kOther;
  int64_t duration_ns = 0;
  int32_t block_index = 0;
  int64_t workspace_bytes = 0;
  // Informational: the work the duration was measured or derived from.
  int64_t flops = 0;
  int64_t memory_traffic_bytes = 0;
};

struct TensorSpec {
  std::string name;
  int64_t size_bytes = 0;
  int32_t producer_op = 0;
  std::vector<int32_t> use_ops;
  int64_t recompute_duration_ns = 0;
  std::vector<int32_t> recompute_inputs;
  bool swap_forbidden = false;
  bool recompute_forbidden = false;
};

// A FixedTransfer (trace.h) with its name.
struct FixedTransferSpec {
  std::string name;
  Direction direction = Direction::kD2H;
  int64_t size_bytes = 0;
  int32_t after_op = -1;
  int32_t before_op = -1;
  int64_t gpu_bytes = 0;
  int32_t release_op = -1;
};

struct TraceSpec {
  std::string name;
  std::vector<OperatorSpec> operators;
  std::vector<TensorSpec> tensors;
  std::vector<FixedTransferSpec> fixed_transfers;
};

// The bytes `spec` takes serialized as a slackswap.v1.Trace (what
// ByteSizeLong returns for the converted message), computed from the
// encoding rules of proto3 without building the message.
int64_t SerializedBytes(const TraceSpec& spec);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_TRACE_SPEC_H_
