// File: trace.h
//
// The compact, validated form of one profiled iteration that the event model
// and the planners work on. Operators and tensors are flat arrays indexed by
// id; variable-length relations (uses, recompute inputs, ...) are stored in
// compressed-sparse-row form: the items of row i are
// `items[begin[i] .. begin[i + 1])`.
//
// A Trace is built once by `ValidateTrace` (trace_validation.h), from a
// generated TraceSpec, or by the service's TraceFromProto and TraceFromWire
// from the wire form, all of which check every rule of docs/event-model.md;
// all code that receives a Trace may assume those rules hold. A Trace is
// immutable after construction and safe to share between threads.
#ifndef SLACKSWAP_SIMULATOR_TRACE_H_
#define SLACKSWAP_SIMULATOR_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/types/span.h"

namespace slackswap {

enum class Phase : uint8_t { kForward, kBackward, kOptimizer };

enum class OpKind : uint8_t {
  kOther,
  kMatmul,
  kAttention,
  kConv,
  kElementwise,
  kNormalization,
  kDropout,
  kPooling,
  kEmbedding,
  kLoss,
  kOptimizer,
};

struct Op {
  int64_t duration_ns = 0;
  int64_t workspace_bytes = 0;
  // The work the duration was profiled or derived from (0: unknown); HBM
  // contention slows ops with a traffic figure (docs/event-model.md).
  int64_t flops = 0;
  int64_t memory_traffic_bytes = 0;
  int32_t block_index = 0;
  Phase phase = Phase::kForward;
  OpKind kind = OpKind::kOther;
};

// Traffic the job moves over the host link itself, beside the plan's
// activation copies: ZeRO-Offload's gradients and parameters, FSDP CPU
// offload's parameter fetches and gradient copies (docs/event-model.md,
// "Fixed transfers"). The replay runs each on its direction's stream in the
// queue order that section states.
enum class Direction : uint8_t { kD2H, kH2D };

struct FixedTransfer {
  Direction direction = Direction::kD2H;
  int64_t size_bytes = 0;  // bytes over the link
  // It may start once this op has ended; -1: from the iteration's start.
  int32_t after_op = -1;
  // This op cannot start before it has ended; -1: none (the iteration still
  // ends only when it has).
  int32_t before_op = -1;
  // GPU bytes it holds. H2D: from its start until release_op has ended (the
  // copy it brings). D2H: from after_op's start (the source that op writes)
  // until the transfer has ended.
  int64_t gpu_bytes = 0;
  int32_t release_op = -1;  // H2D holding bytes only; >= before_op
};

struct Tensor {
  int64_t size_bytes = 0;
  int64_t recompute_ns = 0;
  int32_t producer_op = 0;
  // Last forward operator that reads the tensor; the producer if none does.
  int32_t last_forward_use = 0;
  int32_t first_backward_use = 0;
  int32_t last_backward_use = 0;
  bool swap_forbidden = false;
  bool recompute_forbidden = false;
};

// A CSR relation from rows 0..n-1 to int32 items.
struct Csr {
  std::vector<int32_t> begin{0};  // size n + 1
  std::vector<int32_t> items;

  absl::Span<const int32_t> Row(int32_t i) const {
    return absl::MakeConstSpan(items.data() + begin[i],
                               static_cast<size_t>(begin[i + 1] - begin[i]));
  }
  int32_t rows() const { return static_cast<int32_t>(begin.size()) - 1; }
  // Builds the relation from (row, item) pairs; items of a row keep the
  // order of `pairs`. O(rows + pairs).
  static Csr FromPairs(int32_t rows,
                       const std::vector<std::pair<int32_t, int32_t>>& pairs);
  // Builds the relation in which row r lists every item i with row_of[i] ==
  // r (-1: in no row), in the order of `order` (every item once), or
  // ascending when `order` is empty. O(rows + items).
  static Csr FromRows(int32_t rows, absl::Span<const int32_t> row_of,
                      absl::Span<const int32_t> order = {});
};

struct Trace {
  std::string name;
  std::vector<Op> ops;
  std::vector<Tensor> tensors;

  // tensor -> operators that read it, ascending, without duplicates.
  Csr uses;
  // op -> tensors it reads, ascending.
  Csr reads;
  // op -> tensors it produces, ascending.
  Csr produces;
  // tensor -> saved tensors its rebuild reads, ascending.
  Csr recompute_inputs;
  // tensor -> tensors whose rebuild reads it, ascending.
  Csr recompute_dependents;
  // Tensor ids ordered so that every recompute input precedes its dependents.
  std::vector<int32_t> recompute_topological_order;

  // Transfers the job makes itself (empty for most traces).
  std::vector<FixedTransfer> fixed_transfers;
  // Per op, with fixed transfers only (empty otherwise): the GPU bytes they
  // hold at the op's start at every speed: each parameter copy from its
  // before_op through its release_op, each gradient source during its
  // after_op. Planners add it to the op's workspace (transient_bytes).
  std::vector<int64_t> op_fixed_bytes;

  // Bytes an operator allocates when it starts: produced tensors + workspace
  // + the sources of the D2H fixed transfers that start after it.
  std::vector<int64_t> op_allocation_bytes;

  int32_t num_forward_ops = 0;  // forward operators are 0..num_forward_ops-1
  int32_t num_backward_ops = 0;
  int64_t ideal_ns = 0;            // sum of operator durations
  int64_t total_tensor_bytes = 0;  // sum of tensor sizes

  int32_t num_ops() const { return static_cast<int32_t>(ops.size()); }
  int32_t num_tensors() const { return static_cast<int32_t>(tensors.size()); }
  int32_t num_fixed_transfers() const {
    return static_cast<int32_t>(fixed_transfers.size());
  }
  int32_t first_backward_op() const { return num_forward_ops; }
  // What op `o` holds beside the saved tensors while it runs, at every
  // speed: its workspace and the fixed transfers' bytes (op_fixed_bytes).
  int64_t transient_bytes(int32_t o) const {
    return ops[o].workspace_bytes +
           (op_fixed_bytes.empty() ? 0 : op_fixed_bytes[o]);
  }
};

// Trace::op_fixed_bytes from the trace's ops and fixed transfers (empty
// when it has none). O(ops + fixed transfers).
std::vector<int64_t> FixedBytesPerOp(const Trace& trace);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_TRACE_H_
