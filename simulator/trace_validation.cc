#include "simulator/trace_validation.h"

#include "base/utf8.h"

namespace slackswap {
namespace trace_validation {

std::string Path(absl::string_view prefix, int index, absl::string_view field) {
  return absl::StrCat(prefix, "[", index, "].", field);
}

void CheckQuantity(FieldViolations& v, absl::FunctionRef<std::string()> field,
                   int64_t value, absl::string_view unit) {
  if (value < 0) {
    v.Add(field(), "must be >= 0");
  } else if (value > kMaxQuantity) {
    v.Add(field(), absl::StrCat("must be at most 2^60 ", unit));
  }
}

void CheckQuantity(FieldViolations& v, absl::string_view field, int64_t value,
                   absl::string_view unit) {
  CheckQuantity(
      v, [field] { return std::string(field); }, value, unit);
}

void CheckName(FieldViolations& v, absl::FunctionRef<std::string()> field,
               absl::string_view name) {
  if (name.size() > kMaxNameBytes) {
    v.Add(field(), "longer than 256 bytes");
  } else if (!IsWellFormedUtf8(name)) {
    v.Add(field(), "not valid UTF-8");
  }
}

bool AddBounded(int64_t& sum, int64_t value) {
  sum += value;  // both operands <= 2^60 here: no overflow
  if (sum > kMaxQuantity) {
    sum = kMaxQuantity + 1;
    return false;
  }
  return true;
}

namespace {

// Kahn's algorithm with a FIFO seeded in id order: deterministic, iterative.
absl::Status OrderRecomputeGraph(Trace& trace) {
  const int32_t n = trace.num_tensors();
  std::vector<int32_t> pending(n);
  std::vector<int32_t>& order = trace.recompute_topological_order;
  order.clear();
  order.reserve(n);
  for (int32_t t = 0; t < n; ++t) {
    pending[t] = static_cast<int32_t>(trace.recompute_inputs.Row(t).size());
    if (pending[t] == 0) order.push_back(t);
  }
  for (size_t head = 0; head < order.size(); ++head) {
    for (int32_t d : trace.recompute_dependents.Row(order[head])) {
      if (--pending[d] == 0) order.push_back(d);
    }
  }
  if (static_cast<int32_t>(order.size()) == n) return absl::OkStatus();
  // Every tensor left has an input that is also left: walking inputs from
  // one of them must revisit a tensor, and that tensor lies on a cycle.
  int32_t t = 0;
  while (pending[t] == 0) ++t;
  std::vector<uint8_t> seen(n, 0);
  while (!seen[t]) {
    seen[t] = 1;
    for (int32_t r : trace.recompute_inputs.Row(t)) {
      if (pending[r] > 0) {
        t = r;
        break;
      }
    }
  }
  return InvalidField(
      absl::StrCat("trace.tensors[", t, "].recompute_inputs"),
      "forms a cycle: a tensor's rebuild cannot depend on itself");
}

}  // namespace

absl::Status FinishTrace(std::vector<std::pair<int32_t, int32_t>>& use_pairs,
                         std::vector<std::pair<int32_t, int32_t>>& input_pairs,
                         Trace& trace) {
  const int32_t n = trace.num_tensors();
  const int32_t num_ops = trace.num_ops();
  auto sort_unique = [](std::vector<std::pair<int32_t, int32_t>>& pairs) {
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  };
  sort_unique(use_pairs);
  sort_unique(input_pairs);
  trace.uses = Csr::FromPairs(n, use_pairs);
  trace.recompute_inputs = Csr::FromPairs(n, input_pairs);
  // The reversed relations: the pairs come sorted by tensor, and
  // Csr::FromPairs keeps their order within a row, so each row ascends.
  std::vector<std::pair<int32_t, int32_t>> reversed;
  reversed.reserve(std::max(use_pairs.size(), input_pairs.size()));
  for (const auto& [t, u] : use_pairs) reversed.emplace_back(u, t);
  trace.reads = Csr::FromPairs(num_ops, reversed);
  reversed.clear();
  for (const auto& [t, r] : input_pairs) reversed.emplace_back(r, t);
  trace.recompute_dependents = Csr::FromPairs(n, reversed);
  reversed.clear();
  for (int32_t t = 0; t < n; ++t)
    reversed.emplace_back(trace.tensors[t].producer_op, t);
  trace.produces = Csr::FromPairs(num_ops, reversed);

  SLACKSWAP_RETURN_IF_ERROR(OrderRecomputeGraph(trace));
  // Each operator's allocation is its workspace, the tensors it produces and
  // the sources of the D2H fixed transfers that start after it: each sum is
  // at most 2^60 (the workspaces' here, the others' in validation), so no
  // allocation, nor any sum of them, passes 3 * 2^60.
  int64_t workspace_sum = 0;
  trace.op_allocation_bytes.resize(trace.ops.size());
  for (int32_t o = 0; o < num_ops; ++o) {
    int64_t bytes = trace.ops[o].workspace_bytes;
    for (int32_t t : trace.produces.Row(o))
      bytes += trace.tensors[t].size_bytes;
    trace.op_allocation_bytes[o] = bytes;
    if (!AddBounded(workspace_sum, trace.ops[o].workspace_bytes)) {
      return InvalidField("trace.operators",
                          "workspace sizes sum to more than 2^60 bytes");
    }
  }
  for (const FixedTransfer& x : trace.fixed_transfers) {
    if (x.direction == Direction::kD2H && x.gpu_bytes > 0)
      trace.op_allocation_bytes[x.after_op] += x.gpu_bytes;
  }
  trace.op_fixed_bytes = FixedBytesPerOp(trace);
  return absl::OkStatus();
}

}  // namespace trace_validation

namespace {

// TraceSpec with the accessors of the generated message.
struct SpecOperator {
  const OperatorSpec& op;
  absl::string_view name() const { return op.name; }
  int64_t duration_ns() const { return op.duration_ns; }
  int32_t block_index() const { return op.block_index; }
  int64_t workspace_bytes() const { return op.workspace_bytes; }
  int64_t flops() const { return op.flops; }
  int64_t memory_traffic_bytes() const { return op.memory_traffic_bytes; }
};

struct SpecTensor {
  const TensorSpec& t;
  absl::string_view name() const { return t.name; }
  int64_t size_bytes() const { return t.size_bytes; }
  int32_t producer_op() const { return t.producer_op; }
  int use_ops_size() const { return static_cast<int>(t.use_ops.size()); }
  int32_t use_ops(int j) const { return t.use_ops[j]; }
  int64_t recompute_duration_ns() const { return t.recompute_duration_ns; }
  int recompute_inputs_size() const {
    return static_cast<int>(t.recompute_inputs.size());
  }
  int32_t recompute_inputs(int j) const { return t.recompute_inputs[j]; }
  bool swap_forbidden() const { return t.swap_forbidden; }
  bool recompute_forbidden() const { return t.recompute_forbidden; }
};

// -1 is unset, as in FixedTransfer (trace.h); the message's optional fields.
struct SpecFixedTransfer {
  const FixedTransferSpec& x;
  absl::string_view name() const { return x.name; }
  int64_t size_bytes() const { return x.size_bytes; }
  bool has_after_op() const { return x.after_op != -1; }
  int32_t after_op() const { return x.after_op; }
  bool has_before_op() const { return x.before_op != -1; }
  int32_t before_op() const { return x.before_op; }
  int64_t gpu_bytes() const { return x.gpu_bytes; }
  bool has_release_op() const { return x.release_op != -1; }
  int32_t release_op() const { return x.release_op; }
};

struct SpecTrace {
  const TraceSpec& spec;
  absl::string_view name() const { return spec.name; }
  // Counts past the int range are reported as over the limits.
  int operators_size() const {
    return Count(spec.operators.size(), kMaxOperators);
  }
  SpecOperator operators(int i) const { return {spec.operators[i]}; }
  int tensors_size() const { return Count(spec.tensors.size(), kMaxTensors); }
  SpecTensor tensors(int i) const { return {spec.tensors[i]}; }
  int fixed_transfers_size() const {
    return Count(spec.fixed_transfers.size(), kMaxFixedTransfers);
  }
  SpecFixedTransfer fixed_transfers(int i) const {
    return {spec.fixed_transfers[i]};
  }

  static int Count(size_t n, int limit) {
    return static_cast<int>(std::min<size_t>(n, limit + size_t{1}));
  }
};

struct SpecForm {
  static std::optional<Phase> PhaseOf(const SpecOperator& op) {
    switch (op.op.phase) {
      case Phase::kForward:
      case Phase::kBackward:
      case Phase::kOptimizer:
        return op.op.phase;
    }
    return std::nullopt;
  }
  static std::optional<OpKind> KindOf(const SpecOperator& op) {
    if (static_cast<int>(op.op.kind) > static_cast<int>(OpKind::kOptimizer))
      return std::nullopt;
    return op.op.kind;
  }
  static std::optional<Direction> DirectionOf(const SpecFixedTransfer& x) {
    switch (x.x.direction) {
      case Direction::kD2H:
      case Direction::kH2D:
        return x.x.direction;
    }
    return std::nullopt;
  }
};

}  // namespace

absl::StatusOr<Trace> ValidateTrace(const TraceSpec& spec) {
  return trace_validation::Validate<SpecForm>(SpecTrace{spec});
}

}  // namespace slackswap
