#include "simulator/proto_convert.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/schedule.h"
#include "simulator/trace_wire.h"

namespace slackswap {
namespace {

std::string Path(absl::string_view prefix, int index, absl::string_view field) {
  return absl::StrCat(prefix, "[", index, "].", field);
}

// `field` makes the path only for a violation: valid traces of thousands of
// operators are converted without building a string per field.
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

// Names are at most kMaxNameBytes of UTF-8. (A parsed message's names are
// UTF-8 already; the wire decoder's are checked only here.)
void CheckName(FieldViolations& v, absl::FunctionRef<std::string()> field,
               absl::string_view name) {
  if (name.size() > kMaxNameBytes) {
    v.Add(field(), "longer than 256 bytes");
  } else if (!IsWellFormedUtf8(name)) {
    v.Add(field(), "not valid UTF-8");
  }
}

// Adds `value` to `sum`; false once the sum passes kMaxQuantity.
bool AddBounded(int64_t& sum, int64_t value) {
  sum += value;  // both operands <= 2^60 here: no overflow
  if (sum > kMaxQuantity) {
    sum = kMaxQuantity + 1;
    return false;
  }
  return true;
}

Phase PhaseFromProto(v1::Phase phase) {
  switch (phase) {
    case v1::PHASE_BACKWARD:
      return Phase::kBackward;
    case v1::PHASE_OPTIMIZER:
      return Phase::kOptimizer;
    default:
      return Phase::kForward;
  }
}

OpKind KindFromProto(v1::OpKind kind) {
  switch (kind) {
    case v1::OP_KIND_MATMUL:
      return OpKind::kMatmul;
    case v1::OP_KIND_ATTENTION:
      return OpKind::kAttention;
    case v1::OP_KIND_CONV:
      return OpKind::kConv;
    case v1::OP_KIND_ELEMENTWISE:
      return OpKind::kElementwise;
    case v1::OP_KIND_NORMALIZATION:
      return OpKind::kNormalization;
    case v1::OP_KIND_DROPOUT:
      return OpKind::kDropout;
    case v1::OP_KIND_POOLING:
      return OpKind::kPooling;
    case v1::OP_KIND_EMBEDDING:
      return OpKind::kEmbedding;
    case v1::OP_KIND_LOSS:
      return OpKind::kLoss;
    case v1::OP_KIND_OPTIMIZER:
      return OpKind::kOptimizer;
    default:
      return OpKind::kOther;
  }
}

// TraceMessage: v1::Trace, or WireTrace (trace_wire.h), which offers the same
// accessors over the serialized bytes.
template <typename TraceMessage>
absl::Status ConvertOperators(const TraceMessage& proto, Trace& trace) {
  FieldViolations v;
  const int n = proto.operators_size();
  trace.ops.resize(n);
  v1::Phase previous = v1::PHASE_FORWARD;
  bool sum_reported = false;
  for (int i = 0; i < n && !v.full(); ++i) {
    const auto& op = proto.operators(i);
    CheckName(
        v, [i] { return Path("trace.operators", i, "name"); }, op.name());
    const v1::Phase phase = op.phase();
    if (phase != v1::PHASE_FORWARD && phase != v1::PHASE_BACKWARD &&
        phase != v1::PHASE_OPTIMIZER) {
      v.Add(Path("trace.operators", i, "phase"),
            "must be PHASE_FORWARD, PHASE_BACKWARD or PHASE_OPTIMIZER");
    } else if (phase < previous) {
      v.Add(Path("trace.operators", i, "phase"),
            "out of order: all forward operators come first, then backward, "
            "then optimizer");
    } else {
      previous = phase;
    }
    if (!v1::OpKind_IsValid(op.kind()))
      v.Add(Path("trace.operators", i, "kind"), "unknown value");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "duration_ns"); },
        op.duration_ns(), "ns");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "workspace_bytes"); },
        op.workspace_bytes(), "bytes");
    // Block indices name layers: there cannot be more layers than operators,
    // and planners keep one entry per block index.
    if (op.block_index() < 0 || op.block_index() >= n) {
      v.Add(Path("trace.operators", i, "block_index"),
            absl::StrCat("out of range [0, ", n,
                         "): at most one block per operator"));
    }
    if (op.duration_ns() >= 0 && op.duration_ns() <= kMaxQuantity &&
        !AddBounded(trace.ideal_ns, op.duration_ns()) && !sum_reported) {
      v.Add("trace.operators", "durations sum to more than 2^60 ns");
      sum_reported = true;
    }
    Op& out = trace.ops[i];
    out.duration_ns = op.duration_ns();
    out.workspace_bytes = op.workspace_bytes();
    out.block_index = op.block_index();
    out.phase = PhaseFromProto(phase);
    out.kind = KindFromProto(op.kind());
    if (out.phase == Phase::kForward) ++trace.num_forward_ops;
    if (out.phase == Phase::kBackward) ++trace.num_backward_ops;
  }
  return v.ToStatus();
}

template <typename TraceMessage>
absl::Status ConvertTensors(const TraceMessage& proto, Trace& trace) {
  FieldViolations v;
  const int n = proto.tensors_size();
  const int num_ops = trace.num_ops();
  trace.tensors.resize(n);
  std::vector<std::pair<int32_t, int32_t>> use_pairs, input_pairs;
  bool sum_reported = false;
  for (int i = 0; i < n && !v.full(); ++i) {
    const auto& tp = proto.tensors(i);
    auto at = [i](absl::string_view field) {
      return Path("trace.tensors", i, field);
    };
    Tensor& t = trace.tensors[i];
    CheckName(
        v, [&] { return at("name"); }, tp.name());
    CheckQuantity(
        v, [&] { return at("size_bytes"); }, tp.size_bytes(), "bytes");
    if (tp.size_bytes() >= 0 && tp.size_bytes() <= kMaxQuantity &&
        !AddBounded(trace.total_tensor_bytes, tp.size_bytes()) &&
        !sum_reported) {
      v.Add("trace.tensors", "sizes sum to more than 2^60 bytes");
      sum_reported = true;
    }
    CheckQuantity(
        v, [&] { return at("recompute_duration_ns"); },
        tp.recompute_duration_ns(), "ns");
    const int32_t producer = tp.producer_op();
    bool producer_ok = false;
    if (producer < 0 || producer >= num_ops) {
      v.Add(at("producer_op"), absl::StrCat("out of range [0, ", num_ops, ")"));
    } else if (trace.ops[producer].phase != Phase::kForward) {
      v.Add(at("producer_op"), "must be a forward operator");
    } else {
      producer_ok = true;
    }
    bool uses_ok = true;
    int32_t last_forward = producer, first_backward = num_ops,
            last_backward = -1;
    for (int j = 0; j < tp.use_ops_size(); ++j) {
      const int32_t u = tp.use_ops(j);
      auto use_path = [&] { return absl::StrCat(at("use_ops"), "[", j, "]"); };
      if (u < 0 || u >= num_ops) {
        v.Add(use_path(), absl::StrCat("out of range [0, ", num_ops, ")"));
      } else if (producer_ok && u <= producer) {
        v.Add(use_path(),
              absl::StrCat("op ", u, " does not come after the producer (op ",
                           producer, ")"));
      } else if (trace.ops[u].phase == Phase::kOptimizer) {
        v.Add(use_path(),
              "an optimizer operator cannot read a saved activation");
      } else {
        if (trace.ops[u].phase == Phase::kForward) {
          last_forward = std::max(last_forward, u);
        } else {
          first_backward = std::min(first_backward, u);
          last_backward = std::max(last_backward, u);
        }
        use_pairs.emplace_back(i, u);
        continue;
      }
      uses_ok = false;
    }
    if (uses_ok && last_backward < 0) {
      v.Add(at("use_ops"),
            "has no backward use: a saved activation must be read in backward");
    }
    for (int j = 0; j < tp.recompute_inputs_size(); ++j) {
      const int32_t r = tp.recompute_inputs(j);
      auto input_path = [&] {
        return absl::StrCat(at("recompute_inputs"), "[", j, "]");
      };
      if (r < 0 || r >= n) {
        v.Add(input_path(), absl::StrCat("out of range [0, ", n, ")"));
      } else if (r == i) {
        v.Add(input_path(), "a tensor cannot be its own recompute input");
      } else {
        input_pairs.emplace_back(i, r);
      }
    }
    t.size_bytes = tp.size_bytes();
    t.recompute_ns = tp.recompute_duration_ns();
    t.producer_op = producer;
    t.last_forward_use = last_forward;
    t.first_backward_use = first_backward;
    t.last_backward_use = last_backward;
    t.swap_forbidden = tp.swap_forbidden();
    t.recompute_forbidden = tp.recompute_forbidden();
  }
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());

  auto sort_unique = [](std::vector<std::pair<int32_t, int32_t>>& pairs) {
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  };
  sort_unique(use_pairs);
  sort_unique(input_pairs);
  trace.uses = Csr::FromPairs(n, use_pairs);
  trace.recompute_inputs = Csr::FromPairs(n, input_pairs);
  std::vector<std::pair<int32_t, int32_t>> reversed;
  reversed.reserve(std::max(use_pairs.size(), input_pairs.size()));
  for (const auto& [t, u] : use_pairs) reversed.emplace_back(u, t);
  std::sort(reversed.begin(), reversed.end());
  trace.reads = Csr::FromPairs(num_ops, reversed);
  reversed.clear();
  for (const auto& [t, r] : input_pairs) reversed.emplace_back(r, t);
  std::sort(reversed.begin(), reversed.end());
  trace.recompute_dependents = Csr::FromPairs(n, reversed);
  reversed.clear();
  for (int32_t t = 0; t < n; ++t)
    reversed.emplace_back(trace.tensors[t].producer_op, t);
  trace.produces = Csr::FromPairs(num_ops, reversed);
  return absl::OkStatus();
}

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

template <typename TraceMessage>
absl::StatusOr<Trace> ConvertTrace(const TraceMessage& proto) {
  if (proto.operators_size() == 0) {
    return InvalidField("trace.operators", "at least one operator is required");
  }
  if (proto.operators_size() > kMaxOperators) {
    return TooLargeField("trace.operators",
                         absl::StrCat("has ", proto.operators_size(),
                                      " entries; at most ", kMaxOperators));
  }
  if (proto.tensors_size() > kMaxTensors) {
    return TooLargeField("trace.tensors",
                         absl::StrCat("has ", proto.tensors_size(),
                                      " entries; at most ", kMaxTensors));
  }
  int64_t relations = 0;
  for (int i = 0; i < proto.tensors_size(); ++i) {
    relations += proto.tensors(i).use_ops_size() +
                 proto.tensors(i).recompute_inputs_size();
  }
  if (relations > kMaxRelations) {
    return TooLargeField(
        "trace.tensors",
        absl::StrCat("use_ops and recompute_inputs hold ", relations,
                     " entries; at most ", kMaxRelations));
  }
  {
    FieldViolations v;
    CheckName(
        v, [] { return std::string("trace.name"); }, proto.name());
    SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  }
  Trace trace;
  trace.name = std::string(proto.name());
  SLACKSWAP_RETURN_IF_ERROR(ConvertOperators(proto, trace));
  SLACKSWAP_RETURN_IF_ERROR(ConvertTensors(proto, trace));
  SLACKSWAP_RETURN_IF_ERROR(OrderRecomputeGraph(trace));
  int64_t workspace_sum = 0;
  trace.op_allocation_bytes.resize(trace.ops.size());
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    int64_t bytes = trace.ops[o].workspace_bytes;
    for (int32_t t : trace.produces.Row(o))
      bytes += trace.tensors[t].size_bytes;
    trace.op_allocation_bytes[o] = bytes;
    if (!AddBounded(workspace_sum, trace.ops[o].workspace_bytes)) {
      return InvalidField("trace.operators",
                          "workspace sizes sum to more than 2^60 bytes");
    }
  }
  return trace;
}

}  // namespace

absl::StatusOr<Trace> TraceFromProto(const v1::Trace& proto) {
  return ConvertTrace(proto);
}

std::optional<absl::StatusOr<Trace>> TraceFromWire(absl::string_view bytes) {
  WireTrace wire;
  if (!DecodeWireTrace(bytes, wire)) return std::nullopt;
  return ConvertTrace(wire);
}

absl::StatusOr<Hardware> HardwareFromProto(const v1::Hardware& proto) {
  FieldViolations v;
  if (proto.name().size() > kMaxNameBytes)
    v.Add("hardware.name", "longer than 256 bytes");
  if (proto.d2h_bytes_per_second() <= 0)
    v.Add("hardware.d2h_bytes_per_second", "must be > 0");
  if (proto.h2d_bytes_per_second() <= 0)
    v.Add("hardware.h2d_bytes_per_second", "must be > 0");
  CheckQuantity(v, "hardware.transfer_latency_ns", proto.transfer_latency_ns(),
                "ns");
  CheckQuantity(v, "hardware.gpu_memory_bytes", proto.gpu_memory_bytes(),
                "bytes");
  CheckQuantity(v, "hardware.host_pinned_memory_bytes",
                proto.host_pinned_memory_bytes(), "bytes");
  if (proto.matmul_flops_per_second() < 0) {
    v.Add("hardware.matmul_flops_per_second", "must be >= 0");
  }
  if (proto.hbm_bytes_per_second() < 0)
    v.Add("hardware.hbm_bytes_per_second", "must be >= 0");
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  Hardware h;
  h.name = proto.name();
  h.d2h_bytes_per_second = proto.d2h_bytes_per_second();
  h.h2d_bytes_per_second = proto.h2d_bytes_per_second();
  h.transfer_latency_ns = proto.transfer_latency_ns();
  h.gpu_memory_bytes = proto.gpu_memory_bytes();
  h.host_pinned_memory_bytes = proto.host_pinned_memory_bytes();
  h.matmul_flops_per_second = proto.matmul_flops_per_second();
  h.hbm_bytes_per_second = proto.hbm_bytes_per_second();
  return h;
}

v1::Hardware HardwareToProto(const Hardware& h) {
  v1::Hardware proto;
  proto.set_name(h.name);
  proto.set_d2h_bytes_per_second(h.d2h_bytes_per_second);
  proto.set_h2d_bytes_per_second(h.h2d_bytes_per_second);
  proto.set_transfer_latency_ns(h.transfer_latency_ns);
  proto.set_gpu_memory_bytes(h.gpu_memory_bytes);
  proto.set_host_pinned_memory_bytes(h.host_pinned_memory_bytes);
  proto.set_matmul_flops_per_second(h.matmul_flops_per_second);
  proto.set_hbm_bytes_per_second(h.hbm_bytes_per_second);
  return proto;
}

absl::StatusOr<int64_t> ResolveBudget(const Trace& trace,
                                      const v1::Budget& budget) {
  switch (budget.limit_case()) {
    case v1::Budget::kBytes:
      if (budget.bytes() < 0)
        return InvalidField("budget.bytes", "must be >= 0");
      return budget.bytes();
    case v1::Budget::kFractionOfPeak: {
      const double f = budget.fraction_of_peak();
      if (!std::isfinite(f) || f <= 0 || f > 1e6) {
        return InvalidField("budget.fraction_of_peak", "must be in (0, 1e6]");
      }
      const long double bytes =
          std::floor(static_cast<long double>(f) * AllKeepPeakBytes(trace));
      if (bytes >= static_cast<long double>(kMaxQuantity))
        return kUnlimitedBytes;
      return static_cast<int64_t>(bytes);
    }
    case v1::Budget::kUnlimited:
      if (!budget.unlimited())
        return InvalidField("budget.unlimited", "must be true when set");
      return kUnlimitedBytes;
    default:
      return InvalidField("budget",
                          "required: set bytes, fraction_of_peak or unlimited");
  }
}

absl::StatusOr<Plan> PlanFromProto(const Trace& trace, const v1::Plan& proto) {
  if (proto.tensors_size() != trace.num_tensors()) {
    return InvalidField(
        "plan.tensors",
        absl::StrCat("has ", proto.tensors_size(), " entries; the trace has ",
                     trace.num_tensors(), " tensors"));
  }
  FieldViolations v;
  Plan plan;
  plan.decisions.resize(proto.tensors_size());
  plan.prefetch_issue_op.resize(proto.tensors_size());
  for (int i = 0; i < proto.tensors_size() && !v.full(); ++i) {
    const v1::TensorPlan& tp = proto.tensors(i);
    switch (tp.decision()) {
      case v1::DECISION_KEEP:
        plan.decisions[i] = Decision::kKeep;
        break;
      case v1::DECISION_SWAP:
        plan.decisions[i] = Decision::kSwap;
        break;
      case v1::DECISION_RECOMPUTE:
        plan.decisions[i] = Decision::kRecompute;
        break;
      default:
        v.Add(Path("plan.tensors", i, "decision"),
              "must be DECISION_KEEP, DECISION_SWAP or DECISION_RECOMPUTE");
    }
    plan.prefetch_issue_op[i] = tp.prefetch_issue_op();
  }
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  return plan;
}

v1::Plan PlanToProto(const Plan& plan, const Schedule& schedule) {
  v1::Plan proto;
  for (size_t t = 0; t < plan.decisions.size(); ++t) {
    v1::TensorPlan* tp = proto.add_tensors();
    switch (plan.decisions[t]) {
      case Decision::kKeep:
        tp->set_decision(v1::DECISION_KEEP);
        break;
      case Decision::kSwap:
        tp->set_decision(v1::DECISION_SWAP);
        tp->set_prefetch_issue_op(plan.prefetch_issue_op[t]);
        break;
      case Decision::kRecompute:
        tp->set_decision(v1::DECISION_RECOMPUTE);
        break;
    }
  }
  for (int32_t t : schedule.offload_order) proto.add_offload_order(t);
  for (int32_t t : schedule.prefetch_order) {
    v1::Prefetch* p = proto.add_prefetches();
    p->set_tensor(t);
    p->set_issue_op(plan.prefetch_issue_op[t]);
    p->set_need_op(schedule.need_op[t]);
  }
  for (int32_t o = 0; o < schedule.rebuilds.rows(); ++o) {
    if (schedule.rebuilds.Row(o).empty()) continue;
    v1::RebuildPoint* point = proto.add_rebuild_points();
    point->set_before_op(o);
    for (int32_t t : schedule.rebuilds.Row(o)) point->add_tensors(t);
  }
  return proto;
}

v1::Metrics MetricsToProto(const SimulationResult& r) {
  v1::Metrics m;
  m.set_outcome(r.feasible ? v1::SIMULATION_OUTCOME_COMPLETED
                           : v1::SIMULATION_OUTCOME_INFEASIBLE);
  if (!r.feasible) {
    v1::Infeasibility* why = m.mutable_infeasibility();
    why->set_op(r.infeasibility.op);
    why->set_rebuild_tensor(r.infeasibility.rebuild_tensor);
    switch (r.infeasibility.waiting_for) {
      case WaitCause::kMemory:
        why->set_waiting_for(v1::WAIT_CAUSE_MEMORY);
        break;
      case WaitCause::kPrefetch:
        why->set_waiting_for(v1::WAIT_CAUSE_PREFETCH);
        break;
      case WaitCause::kBarrier:
        why->set_waiting_for(v1::WAIT_CAUSE_BARRIER);
        break;
      case WaitCause::kNone:
        break;
    }
    why->set_bytes_needed(r.infeasibility.bytes_needed);
    why->set_bytes_resident(r.infeasibility.bytes_resident);
    why->set_budget_bytes(r.budget_bytes);
    why->set_reason(r.infeasibility.reason);
  }
  m.set_iteration_ns(r.iteration_ns);
  m.set_ideal_ns(r.ideal_ns);
  m.set_throughput_ratio(r.throughput_ratio);
  m.set_prefetch_wait_ns(r.prefetch_wait_ns);
  m.set_memory_wait_ns(r.memory_wait_ns);
  m.set_barrier_wait_ns(r.barrier_wait_ns);
  m.set_recompute_ns(r.recompute_ns);
  m.set_swapped_bytes(r.swapped_bytes);
  m.set_recomputed_bytes(r.recomputed_bytes);
  m.set_kept_bytes(r.kept_bytes);
  m.set_peak_resident_bytes(r.peak_resident_bytes);
  m.set_budget_bytes(r.budget_bytes);
  m.set_d2h_busy_ns(r.d2h_busy_ns);
  m.set_h2d_busy_ns(r.h2d_busy_ns);
  m.set_forward_end_ns(r.forward_end_ns);
  m.set_last_offload_lag_ns(r.last_offload_lag_ns);
  return m;
}

v1::Timeline TimelineToProto(const SimulationResult& r) {
  v1::Timeline timeline;
  for (const TimelineEvent& e : r.timeline) {
    v1::TimelineEvent* out = timeline.add_events();
    switch (e.kind) {
      case TimelineKind::kOp:
        out->set_kind(v1::TIMELINE_EVENT_KIND_OP);
        break;
      case TimelineKind::kRebuild:
        out->set_kind(v1::TIMELINE_EVENT_KIND_REBUILD);
        break;
      case TimelineKind::kOffload:
        out->set_kind(v1::TIMELINE_EVENT_KIND_OFFLOAD);
        break;
      case TimelineKind::kPrefetch:
        out->set_kind(v1::TIMELINE_EVENT_KIND_PREFETCH);
        break;
    }
    out->set_index(e.index);
    out->set_start_ns(e.start_ns);
    out->set_end_ns(e.end_ns);
    out->set_resident_bytes(e.resident_bytes);
  }
  return timeline;
}

}  // namespace slackswap
