#include "service/wire_convert.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/trace_limits.h"
#include "simulator/trace_validation.h"

namespace slackswap {

using trace_validation::CheckQuantity;
using trace_validation::Path;

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
  if (proto.gpus_per_uplink() < 0 || proto.gpus_per_uplink() > 64)
    v.Add("hardware.gpus_per_uplink", "must be in [1, 64] (0: 1)");
  if (proto.uplink_d2h_bytes_per_second() < 0) {
    v.Add("hardware.uplink_d2h_bytes_per_second", "must be >= 0 (0: no cap)");
  }
  if (proto.uplink_h2d_bytes_per_second() < 0) {
    v.Add("hardware.uplink_h2d_bytes_per_second", "must be >= 0 (0: no cap)");
  }
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
  h.gpus_per_uplink = std::max(proto.gpus_per_uplink(), 1);
  h.uplink_d2h_bytes_per_second = proto.uplink_d2h_bytes_per_second();
  h.uplink_h2d_bytes_per_second = proto.uplink_h2d_bytes_per_second();
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
  // Unset when 1, so that a single GPU's descriptor reads as before.
  if (h.gpus_per_uplink > 1) proto.set_gpus_per_uplink(h.gpus_per_uplink);
  proto.set_uplink_d2h_bytes_per_second(h.uplink_d2h_bytes_per_second);
  proto.set_uplink_h2d_bytes_per_second(h.uplink_h2d_bytes_per_second);
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
  // (The streams' queues also hold the trace's fixed transfers, items from
  // the number of tensors on: the job makes those itself.)
  const auto num_tensors = static_cast<int32_t>(plan.decisions.size());
  for (int32_t t : schedule.offload_order) {
    if (t < num_tensors) proto.add_offload_order(t);
  }
  for (int32_t t : schedule.prefetch_order) {
    if (t >= num_tensors) continue;
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

namespace {

v1::WaitCause WaitCauseToProto(WaitCause cause) {
  switch (cause) {
    case WaitCause::kMemory:
      return v1::WAIT_CAUSE_MEMORY;
    case WaitCause::kPrefetch:
      return v1::WAIT_CAUSE_PREFETCH;
    case WaitCause::kBarrier:
      return v1::WAIT_CAUSE_BARRIER;
    case WaitCause::kFixedTransfer:
      return v1::WAIT_CAUSE_FIXED_TRANSFER;
    case WaitCause::kNone:
      break;
  }
  return v1::WAIT_CAUSE_UNSPECIFIED;
}

}  // namespace

v1::Metrics MetricsToProto(const SimulationResult& r) {
  v1::Metrics m;
  m.set_outcome(r.feasible ? v1::SIMULATION_OUTCOME_COMPLETED
                           : v1::SIMULATION_OUTCOME_INFEASIBLE);
  if (!r.feasible) {
    v1::Infeasibility* why = m.mutable_infeasibility();
    why->set_op(r.infeasibility.op);
    why->set_rebuild_tensor(r.infeasibility.rebuild_tensor);
    why->set_waiting_for(WaitCauseToProto(r.infeasibility.waiting_for));
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
  m.set_fixed_transfer_wait_ns(r.fixed_transfer_wait_ns);
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
  m.set_peak_reserved_bytes(r.peak_reserved_bytes);
  m.set_fragmentation_bytes(r.fragmentation_bytes);
  m.set_contention_ns(r.contention_ns);
  m.set_uplink_wait_ns(r.uplink_wait_ns);
  m.set_rank(r.rank);
  if (!r.scaled.empty()) {
    int64_t worst_iteration = r.iteration_ns;
    double worst_ratio = r.throughput_ratio;
    for (const ScaledReplay& s : r.scaled) {
      v1::ScaledReplay* out = m.add_scaled();
      out->set_kernel_time_factor(s.scaling.kernel_time_factor);
      out->set_link_speed_factor(s.scaling.link_speed_factor);
      if (!s.replayed) continue;
      out->set_outcome(s.feasible ? v1::SIMULATION_OUTCOME_COMPLETED
                                  : v1::SIMULATION_OUTCOME_INFEASIBLE);
      out->set_iteration_ns(s.iteration_ns);
      out->set_ideal_ns(s.ideal_ns);
      out->set_throughput_ratio(s.throughput_ratio);
      out->set_peak_resident_bytes(s.peak_resident_bytes);
      worst_iteration = std::max(worst_iteration, s.iteration_ns);
      worst_ratio = std::min(worst_ratio, s.throughput_ratio);
    }
    m.set_worst_scaled_iteration_ns(worst_iteration);
    m.set_worst_scaled_throughput_ratio(worst_ratio);
  }
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
      case TimelineKind::kStall:
        out->set_kind(v1::TIMELINE_EVENT_KIND_STALL);
        out->set_wait_cause(WaitCauseToProto(e.cause));
        break;
      case TimelineKind::kFixedTransfer:
        out->set_kind(v1::TIMELINE_EVENT_KIND_FIXED_TRANSFER);
        break;
    }
    out->set_index(e.index);
    out->set_start_ns(e.start_ns);
    out->set_end_ns(e.end_ns);
    out->set_resident_bytes(e.resident_bytes);
    out->set_slowed_ns(e.slowed_ns);
  }
  return timeline;
}

absl::StatusOr<Physics> PhysicsFromProto(const v1::Physics& proto) {
  if (proto.rank_skew_ns() < 0 || proto.rank_skew_ns() > (int64_t{1} << 40)) {
    return InvalidField("physics.rank_skew_ns", "must be in [0, 2^40] ns");
  }
  Physics physics;
  physics.hbm_contention = proto.hbm_contention();
  physics.rank_skew_ns = proto.rank_skew_ns();
  switch (proto.allocator()) {
    case v1::ALLOCATOR_MODEL_UNSPECIFIED:
    case v1::ALLOCATOR_MODEL_NONE:
      physics.allocator = AllocatorKind::kNone;
      break;
    case v1::ALLOCATOR_MODEL_CACHING:
      physics.allocator = AllocatorKind::kCaching;
      break;
    case v1::ALLOCATOR_MODEL_EXPANDABLE:
      physics.allocator = AllocatorKind::kExpandable;
      break;
    default:
      return InvalidField("physics.allocator", "unknown value");
  }
  if (proto.budget_reserved() && physics.allocator == AllocatorKind::kNone) {
    return InvalidField("physics.budget_reserved",
                        "needs an allocator model (physics.allocator CACHING "
                        "or EXPANDABLE) to count reserved bytes");
  }
  physics.budget_reserved = proto.budget_reserved();
  return physics;
}

v1::AllocatorModel AllocatorToProto(AllocatorKind kind) {
  switch (kind) {
    case AllocatorKind::kNone:
      return v1::ALLOCATOR_MODEL_NONE;
    case AllocatorKind::kCaching:
      return v1::ALLOCATOR_MODEL_CACHING;
    case AllocatorKind::kExpandable:
      return v1::ALLOCATOR_MODEL_EXPANDABLE;
  }
  return v1::ALLOCATOR_MODEL_UNSPECIFIED;
}

absl::StatusOr<PlannerOptions> PlannerOptionsFromProto(
    const v1::PlannerOptions& proto) {
  FieldViolations v;
  PlannerOptions options;
  if (proto.has_guard_fraction()) {
    const double g = proto.guard_fraction();
    if (!std::isfinite(g) || g < 0 || g > 0.9) {
      v.Add("options.guard_fraction", "must be in [0, 0.9]");
    } else {
      options.guard_fraction = g;
    }
  }
  switch (proto.ranking()) {
    case v1::SWAP_RANKING_UNSPECIFIED:
    case v1::SWAP_RANKING_RECOMPUTE_COST_PER_BYTE:
      options.ranking = SwapRanking::kRecomputeCostPerByte;
      break;
    case v1::SWAP_RANKING_PRODUCTION_ORDER:
      options.ranking = SwapRanking::kProductionOrder;
      break;
    default:
      v.Add("options.ranking", "unknown value");
  }
  if (proto.has_link_budget_pass())
    options.link_budget_pass = proto.link_budget_pass();
  options.per_layer_barriers = proto.per_layer_barriers();
  if (proto.has_max_repair_iterations()) {
    if (proto.max_repair_iterations() < 1 ||
        proto.max_repair_iterations() > 1000) {
      v.Add("options.max_repair_iterations", "must be in [1, 1000]");
    } else {
      options.max_repair_iterations = proto.max_repair_iterations();
    }
  }
  options.linear_program_bound = proto.linear_program_bound();
  if (proto.has_gap_target()) {
    const double g = proto.gap_target();
    if (!std::isfinite(g) || g < 0 || g > 1) {
      v.Add("options.gap_target", "must be in [0, 1]");
    } else {
      options.gap_target = g;
    }
  }
  if (proto.has_search_time_ms()) {
    const double ms = proto.search_time_ms();
    if (!std::isfinite(ms) || ms < 0 || ms > kMaxSearchTimeMs) {
      v.Add("options.search_time_ms", "must be in [0, 60000]");
    } else {
      options.search_time_ms = ms;
    }
  }
  if (!v.empty()) return v.ToStatus();
  return options;
}

v1::PlanningReport PlanningReportToProto(const Trace& trace,
                                         const PlanningResult& result) {
  v1::PlanningReport report;
  report.set_outcome(PlanOutcomeToProto(result.Outcome()));
  report.set_reason(result.reason);
  *report.mutable_plan() =
      PlanToProto(result.plan, DeriveSchedule(trace, result.plan));
  *report.mutable_metrics() = MetricsToProto(result.replay);
  report.set_lower_bound_ns(result.lower_bound.iteration_ns);
  report.set_lower_bound_source(result.lower_bound.source ==
                                        BoundSource::kLinearProgram
                                    ? v1::LOWER_BOUND_SOURCE_LINEAR_PROGRAM
                                    : v1::LOWER_BOUND_SOURCE_FAST);
  report.set_proven_floor_bytes(result.proven_floor_bytes);
  report.set_smallest_planned_budget_bytes(
      result.smallest_planned_budget_bytes);
  report.set_planned_budget_bytes(result.planned_budget_bytes);
  report.set_gap_to_lower_bound(result.GapToLowerBound());
  v1::PlannerStatistics* stats = report.mutable_statistics();
  stats->set_swaps_admitted(result.stats.swaps_admitted);
  stats->set_recomputes_marked(result.stats.recomputes_marked);
  stats->set_blocks_recomputed(result.stats.blocks_recomputed);
  stats->set_repair_iterations(result.stats.repair_iterations);
  stats->set_repairs(result.stats.repairs);
  stats->set_search_replays(result.stats.search_replays);
  stats->set_search_improved(result.stats.search_improved);
  stats->set_proven_optimal(result.stats.proven_optimal);
  return report;
}

namespace {

// Each policy's proto value, named after it (planner/policies.h): POLICY_
// and its name in upper case with '-' as '_'; UNSPECIFIED where the proto
// has no such value (a test checks that none is missing).
const std::array<v1::Policy, kNumPolicies>& ProtoPolicies() {
  static const auto* values = [] {
    auto* out = new std::array<v1::Policy, kNumPolicies>;
    for (const PolicyInfo& row : PolicyTable()) {
      std::string name = absl::StrCat("POLICY_", row.name);
      for (char& c : name) c = c == '-' ? '_' : absl::ascii_toupper(c);
      v1::Policy value = v1::POLICY_UNSPECIFIED;
      if (!v1::Policy_Parse(name, &value)) value = v1::POLICY_UNSPECIFIED;
      (*out)[static_cast<int>(row.policy)] = value;
    }
    return out;
  }();
  return *values;
}

}  // namespace

v1::Policy PolicyToProto(Policy policy) {
  return ProtoPolicies()[static_cast<int>(policy)];
}

absl::StatusOr<Policy> PolicyFromProto(v1::Policy policy,
                                       absl::string_view field) {
  if (policy != v1::POLICY_UNSPECIFIED) {
    for (const PolicyInfo& row : PolicyTable()) {
      if (PolicyToProto(row.policy) == policy) return row.policy;
    }
  }
  return InvalidField(field,
                      "must be a known policy other than POLICY_UNSPECIFIED");
}

v1::PlanOutcome PlanOutcomeToProto(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::kPlanned:
      return v1::PLAN_OUTCOME_PLANNED;
    case PlanOutcome::kInfeasible:
      return v1::PLAN_OUTCOME_INFEASIBLE;
    case PlanOutcome::kNoPlanFound:
      return v1::PLAN_OUTCOME_NO_PLAN_FOUND;
  }
  return v1::PLAN_OUTCOME_UNSPECIFIED;
}

v1::FrontierPoint FrontierPointToProto(const FrontierPoint& point, int64_t peak,
                                       int64_t proven_floor_bytes) {
  v1::FrontierPoint p;
  p.set_budget_bytes(point.budget_bytes);
  p.set_budget_fraction_of_peak(
      peak > 0 ? static_cast<double>(point.budget_bytes) / peak : 0);
  p.set_outcome(point.planned ? v1::PLAN_OUTCOME_PLANNED
                : point.budget_bytes < proven_floor_bytes
                    ? v1::PLAN_OUTCOME_INFEASIBLE
                    : v1::PLAN_OUTCOME_NO_PLAN_FOUND);
  if (point.planned) {
    p.set_throughput_ratio(point.throughput_ratio);
    p.set_iteration_ns(point.iteration_ns);
    p.set_swapped_bytes(point.swapped_bytes);
    p.set_recomputed_bytes(point.recomputed_bytes);
  }
  return p;
}

v1::TraceSummary TraceSummaryToProto(const TraceSummary& s) {
  v1::TraceSummary summary;
  summary.set_saved_bytes(s.saved_bytes);
  summary.set_forward_flops(s.forward_flops);
  summary.set_forward_ns(s.forward_ns);
  summary.set_ideal_ns(s.iteration_ns);
  summary.set_flops_per_saved_byte(s.flops_per_saved_byte);
  summary.set_hideable_fraction(s.hideable_fraction);
  return summary;
}

v1::Precision PrecisionToProto(Precision precision) {
  switch (precision) {
    case Precision::kBf16:
      return v1::PRECISION_BF16;
    case Precision::kFp16:
      return v1::PRECISION_FP16;
    case Precision::kFp32:
      return v1::PRECISION_FP32;
  }
  return v1::PRECISION_UNSPECIFIED;
}

std::optional<Precision> PrecisionFromProto(int precision) {
  for (Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp32}) {
    if (precision == PrecisionToProto(p)) return p;
  }
  return std::nullopt;
}

v1::Offload OffloadToProto(Offload offload) {
  switch (offload) {
    case Offload::kNone:
      return v1::OFFLOAD_NONE;
    case Offload::kZero:
      return v1::OFFLOAD_ZERO;
    case Offload::kZeroDpu:
      return v1::OFFLOAD_ZERO_DPU;
    case Offload::kFsdpCpu:
      return v1::OFFLOAD_FSDP_CPU;
  }
  return v1::OFFLOAD_UNSPECIFIED;
}

std::optional<Offload> OffloadFromProto(int offload) {
  if (offload == v1::OFFLOAD_UNSPECIFIED) return Offload::kNone;
  for (Offload o :
       {Offload::kNone, Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    if (offload == OffloadToProto(o)) return o;
  }
  return std::nullopt;
}

}  // namespace slackswap
