// File: trace_limits.h
//
// The sizes a trace may have, shared by its validation (trace_validation.h),
// the wire decoder (service/trace_wire.h) and the workload generator. No
// dependencies, so that none of them includes another for these.
#ifndef SLACKSWAP_SIMULATOR_TRACE_LIMITS_H_
#define SLACKSWAP_SIMULATOR_TRACE_LIMITS_H_

#include <cstddef>
#include <cstdint>

namespace slackswap {

// Limits on accepted traces. A GPT-2 XL trace has about 1,000 operators and
// 500 tensors; the limits leave room for traces thousands of times larger.
inline constexpr int kMaxOperators = 1 << 22;
inline constexpr int kMaxTensors = 1 << 22;
// A job's own host-link transfers (ZeRO-Offload, FSDP CPU offload): a few
// per parameter group and layer.
inline constexpr int kMaxFixedTransfers = 1 << 22;
inline constexpr int64_t kMaxRelations = int64_t{1}
                                         << 24;  // uses + recompute inputs
inline constexpr size_t kMaxNameBytes = 256;
// Bound on any size, sum of sizes, duration or sum of durations, so that
// every later sum stays far from int64 overflow.
inline constexpr int64_t kMaxQuantity = int64_t{1} << 60;

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_TRACE_LIMITS_H_
