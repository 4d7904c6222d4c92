// File: trace_validation.h
//
// Every rule a trace must satisfy (docs/event-model.md, "Trace"), checked
// once, and the compact Trace built from it with its derived fields. Every
// violation names its field path ("trace.tensors[12].use_ops[3]") through
// FieldViolations (field_violations.h). Hostile input (huge counts, cycles,
// negative or overflowing sizes, out-of-range indices) is rejected in time
// linear in the input size, without recursion.
//
// The rules are written once, for any form of a trace that offers the
// accessors of the generated slackswap.v1.Trace: the TraceSpec that the
// generators build (ValidateTrace below), and the parsed message and the wire
// decoder's view that the service converts (service/trace_convert.h).
#ifndef SLACKSWAP_SIMULATOR_TRACE_VALIDATION_H_
#define SLACKSWAP_SIMULATOR_TRACE_VALIDATION_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/trace.h"
#include "simulator/trace_limits.h"
#include "simulator/trace_spec.h"

namespace slackswap {

// Validates `spec` and builds the compact trace. Field paths start with
// "trace".
absl::StatusOr<Trace> ValidateTrace(const TraceSpec& spec);

namespace trace_validation {

// "prefix[index].field"
std::string Path(absl::string_view prefix, int index, absl::string_view field);

// A size or duration: in [0, 2^60]. `field` makes the path only for a
// violation: valid traces of thousands of operators are checked without
// building a string per field.
void CheckQuantity(FieldViolations& v, absl::FunctionRef<std::string()> field,
                   int64_t value, absl::string_view unit);
void CheckQuantity(FieldViolations& v, absl::string_view field, int64_t value,
                   absl::string_view unit);

// Names are at most kMaxNameBytes of UTF-8. (A parsed message's names are
// UTF-8 already; the wire decoder's are checked only here.)
void CheckName(FieldViolations& v, absl::FunctionRef<std::string()> field,
               absl::string_view name);

// Adds `value` to `sum`; false once the sum passes kMaxQuantity.
bool AddBounded(int64_t& sum, int64_t value);

// The CSR relations from the (tensor, op) use pairs and (tensor, input)
// recompute pairs, the recompute order (a cycle names its field), and each
// operator's allocation (with the sources of the D2H fixed transfers in
// `trace.fixed_transfers` after it).
absl::Status FinishTrace(std::vector<std::pair<int32_t, int32_t>>& use_pairs,
                         std::vector<std::pair<int32_t, int32_t>>& input_pairs,
                         Trace& trace);

// A Form reads the enums of one form of a trace (nullopt: a value the form
// does not define):
//   static std::optional<Phase> PhaseOf(const Operator&);
//   static std::optional<OpKind> KindOf(const Operator&);
//   static std::optional<Direction> DirectionOf(const FixedTransfer&);
template <typename Form, typename TraceLike>
void CheckOperators(const TraceLike& in, Trace& trace, FieldViolations& v) {
  const int n = in.operators_size();
  trace.ops.resize(n);
  Phase previous = Phase::kForward;
  bool sum_reported = false;
  for (int i = 0; i < n && !v.full(); ++i) {
    const auto& op = in.operators(i);
    CheckName(
        v, [i] { return Path("trace.operators", i, "name"); }, op.name());
    const std::optional<Phase> phase = Form::PhaseOf(op);
    if (!phase.has_value()) {
      v.Add(Path("trace.operators", i, "phase"),
            "must be PHASE_FORWARD, PHASE_BACKWARD or PHASE_OPTIMIZER");
    } else if (*phase < previous) {
      v.Add(Path("trace.operators", i, "phase"),
            "out of order: all forward operators come first, then backward, "
            "then optimizer");
    } else {
      previous = *phase;
    }
    const std::optional<OpKind> kind = Form::KindOf(op);
    if (!kind.has_value())
      v.Add(Path("trace.operators", i, "kind"), "unknown value");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "duration_ns"); },
        op.duration_ns(), "ns");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "workspace_bytes"); },
        op.workspace_bytes(), "bytes");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "flops"); }, op.flops(),
        "FLOPs");
    CheckQuantity(
        v, [i] { return Path("trace.operators", i, "memory_traffic_bytes"); },
        op.memory_traffic_bytes(), "bytes");
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
    out.flops = op.flops();
    out.memory_traffic_bytes = op.memory_traffic_bytes();
    out.block_index = op.block_index();
    out.phase = phase.value_or(Phase::kForward);
    out.kind = kind.value_or(OpKind::kOther);
    if (out.phase == Phase::kForward) ++trace.num_forward_ops;
    if (out.phase == Phase::kBackward) ++trace.num_backward_ops;
  }
}

// Checks the tensors against the operators as converted, even where those
// had violations (an invalid phase reads as forward), so that one answer
// names the problems of both; collects the (tensor, op) use pairs and the
// (tensor, input) recompute pairs for FinishTrace.
template <typename TraceLike>
void CheckTensors(const TraceLike& in, Trace& trace, FieldViolations& v,
                  std::vector<std::pair<int32_t, int32_t>>& use_pairs,
                  std::vector<std::pair<int32_t, int32_t>>& input_pairs) {
  const int n = in.tensors_size();
  const int num_ops = trace.num_ops();
  trace.tensors.resize(n);
  bool sum_reported = false;
  for (int i = 0; i < n && !v.full(); ++i) {
    const auto& tp = in.tensors(i);
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
}

// The indices of one fixed transfer against `num_ops`, by its direction
// (nullopt: an invalid one, whose own rules are not checked).
template <typename FixedTransferLike>
void CheckFixedTransferOps(const FixedTransferLike& x,
                           std::optional<Direction> direction, int i,
                           int num_ops, FieldViolations& v) {
  auto at = [i](absl::string_view field) {
    return Path("trace.fixed_transfers", i, field);
  };
  const auto range = [num_ops](int32_t from) {
    return absl::StrCat("out of range [", from, ", ", num_ops, ")");
  };
  const bool after = x.has_after_op(), before = x.has_before_op();
  if (after && (x.after_op() < 0 || x.after_op() >= num_ops))
    v.Add(at("after_op"), range(0));
  if (before && (x.before_op() < 0 || x.before_op() >= num_ops)) {
    v.Add(at("before_op"), range(0));
  } else if (before && after && x.before_op() <= x.after_op()) {
    v.Add(at("before_op"),
          absl::StrCat("must come after after_op (op ", x.after_op(),
                       "): an operator cannot need a transfer that waits "
                       "for it to end"));
  }
  if (direction == Direction::kD2H) {
    if (x.gpu_bytes() > 0 && !after) {
      v.Add(at("after_op"),
            "must be set for a D2H transfer with gpu_bytes: the operator "
            "that writes its source");
    }
    if (x.has_release_op()) {
      v.Add(at("release_op"),
            "must be unset for a D2H transfer: its source is freed when "
            "the copy ends");
    }
  } else if (direction == Direction::kH2D && x.gpu_bytes() > 0) {
    if (!before) {
      v.Add(at("before_op"),
            "must be set for an H2D transfer with gpu_bytes: the operator "
            "that reads the copy");
    }
    if (!x.has_release_op()) {
      v.Add(at("release_op"),
            "must be set for an H2D transfer with gpu_bytes: the operator "
            "after which the copy is freed");
    } else {
      // From before_op (when that is valid): the copy is freed at the
      // earliest after the operator that reads it.
      const int32_t first =
          before && x.before_op() >= 0 && x.before_op() < num_ops
              ? x.before_op()
              : 0;
      if (x.release_op() < first || x.release_op() >= num_ops)
        v.Add(at("release_op"), range(first));
    }
  } else if (direction == Direction::kH2D && x.gpu_bytes() == 0 &&
             x.has_release_op()) {
    v.Add(at("release_op"),
          "must be unset for an H2D transfer without gpu_bytes: it holds "
          "nothing to free");
  }
}

// Checks the fixed transfers against the operators as converted, and builds
// them into `trace.fixed_transfers` (-1 for each unset index).
template <typename Form, typename TraceLike>
void CheckFixedTransfers(const TraceLike& in, Trace& trace,
                         FieldViolations& v) {
  const int n = in.fixed_transfers_size();
  const int num_ops = trace.num_ops();
  trace.fixed_transfers.resize(n);
  int64_t size_sum = 0, gpu_sum = 0;
  bool size_sum_reported = false, gpu_sum_reported = false;
  for (int i = 0; i < n && !v.full(); ++i) {
    const auto& x = in.fixed_transfers(i);
    auto at = [i](absl::string_view field) {
      return Path("trace.fixed_transfers", i, field);
    };
    CheckName(
        v, [&] { return at("name"); }, x.name());
    const std::optional<Direction> direction = Form::DirectionOf(x);
    if (!direction.has_value())
      v.Add(at("direction"), "must be DIRECTION_D2H or DIRECTION_H2D");
    CheckQuantity(
        v, [&] { return at("size_bytes"); }, x.size_bytes(), "bytes");
    CheckQuantity(
        v, [&] { return at("gpu_bytes"); }, x.gpu_bytes(), "bytes");
    if (x.size_bytes() >= 0 && x.size_bytes() <= kMaxQuantity &&
        !AddBounded(size_sum, x.size_bytes()) && !size_sum_reported) {
      v.Add("trace.fixed_transfers", "sizes sum to more than 2^60 bytes");
      size_sum_reported = true;
    }
    if (x.gpu_bytes() >= 0 && x.gpu_bytes() <= kMaxQuantity &&
        !AddBounded(gpu_sum, x.gpu_bytes()) && !gpu_sum_reported) {
      v.Add("trace.fixed_transfers", "gpu_bytes sum to more than 2^60 bytes");
      gpu_sum_reported = true;
    }
    CheckFixedTransferOps(x, direction, i, num_ops, v);
    FixedTransfer& out = trace.fixed_transfers[i];
    out.direction = direction.value_or(Direction::kD2H);
    out.size_bytes = x.size_bytes();
    out.after_op = x.has_after_op() ? x.after_op() : -1;
    out.before_op = x.has_before_op() ? x.before_op() : -1;
    out.gpu_bytes = x.gpu_bytes();
    out.release_op = x.has_release_op() ? x.release_op() : -1;
  }
}

// Checks `in` and builds the compact trace: the limits first (in time
// proportional to the counts), then the name, the operators, the tensors and
// the fixed transfers.
template <typename Form, typename TraceLike>
absl::StatusOr<Trace> Validate(const TraceLike& in) {
  if (in.operators_size() == 0) {
    return InvalidField("trace.operators", "at least one operator is required");
  }
  if (in.operators_size() > kMaxOperators) {
    return TooLargeField("trace.operators",
                         absl::StrCat("has ", in.operators_size(),
                                      " entries; at most ", kMaxOperators));
  }
  if (in.tensors_size() > kMaxTensors) {
    return TooLargeField("trace.tensors",
                         absl::StrCat("has ", in.tensors_size(),
                                      " entries; at most ", kMaxTensors));
  }
  int64_t relations = 0;
  for (int i = 0; i < in.tensors_size(); ++i) {
    relations +=
        in.tensors(i).use_ops_size() + in.tensors(i).recompute_inputs_size();
  }
  if (relations > kMaxRelations) {
    return TooLargeField(
        "trace.tensors",
        absl::StrCat("use_ops and recompute_inputs hold ", relations,
                     " entries; at most ", kMaxRelations));
  }
  if (in.fixed_transfers_size() > kMaxFixedTransfers) {
    return TooLargeField(
        "trace.fixed_transfers",
        absl::StrCat("has ", in.fixed_transfers_size(), " entries; at most ",
                     kMaxFixedTransfers));
  }
  {
    FieldViolations v;
    CheckName(
        v, [] { return std::string("trace.name"); }, in.name());
    SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  }
  Trace trace;
  trace.name = std::string(in.name());
  FieldViolations v;
  CheckOperators<Form>(in, trace, v);
  std::vector<std::pair<int32_t, int32_t>> use_pairs, input_pairs;
  CheckTensors(in, trace, v, use_pairs, input_pairs);
  CheckFixedTransfers<Form>(in, trace, v);
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  SLACKSWAP_RETURN_IF_ERROR(FinishTrace(use_pairs, input_pairs, trace));
  return trace;
}

}  // namespace trace_validation
}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_TRACE_VALIDATION_H_
