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
// operator's allocation.
absl::Status FinishTrace(std::vector<std::pair<int32_t, int32_t>>& use_pairs,
                         std::vector<std::pair<int32_t, int32_t>>& input_pairs,
                         Trace& trace);

// A Form reads the enums of one form of a trace (nullopt: a value the form
// does not define):
//   static std::optional<Phase> PhaseOf(const Operator&);
//   static std::optional<OpKind> KindOf(const Operator&);
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
// names the problems of both; builds the relations only when there are none.
template <typename TraceLike>
absl::Status CheckTensors(const TraceLike& in, Trace& trace,
                          FieldViolations& v) {
  const int n = in.tensors_size();
  const int num_ops = trace.num_ops();
  trace.tensors.resize(n);
  std::vector<std::pair<int32_t, int32_t>> use_pairs, input_pairs;
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
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  return FinishTrace(use_pairs, input_pairs, trace);
}

// Checks `in` and builds the compact trace: the limits first (in time
// proportional to the counts), then the name, the operators and the tensors.
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
  SLACKSWAP_RETURN_IF_ERROR(CheckTensors(in, trace, v));
  return trace;
}

}  // namespace trace_validation
}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_TRACE_VALIDATION_H_
