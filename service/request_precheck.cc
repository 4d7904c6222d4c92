// ServiceCore::CheckRequestBytes: a request's counts and its traces' sizes,
// read from its bytes (wire_counts.h) before protobuf builds the message.
#include <optional>
#include <string>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/field_violations.h"
#include "base/saturating.h"
#include "base/status_macros.h"
#include "planner/node_planner.h"
#include "service/service_core.h"
#include "service/wire_counts.h"
#include "simulator/trace_limits.h"

namespace slackswap {
namespace {

// At most `most` elements of `field`; unreadable bytes pass (protobuf refuses
// them).
absl::Status AtMost(absl::string_view message, int field, WireElement element,
                    int64_t most, absl::string_view path,
                    absl::string_view description) {
  const std::optional<int64_t> n = CountElements(message, field, element);
  if (!n.has_value() || *n <= most) return absl::OkStatus();
  return InvalidField(path,
                      absl::StrCat(description, " (the request has ", *n, ")"));
}

}  // namespace

absl::Status ServiceCore::CheckTraceBytes(absl::string_view message,
                                          int trace_field,
                                          absl::string_view field_path,
                                          int64_t& held_bytes) const {
  int64_t operators = 0, tensors = 0, relations = 0, fixed_transfers = 0;
  bool readable = true;
  readable &= ForEachLengthDelimited(
      message, trace_field, [&](absl::string_view trace) {
        const std::optional<int64_t> ops = CountElements(
            trace, v1::Trace::kOperatorsFieldNumber, WireElement::kMessage);
        readable &= ops.has_value();
        operators += ops.value_or(0);
        const std::optional<int64_t> fixed =
            CountElements(trace, v1::Trace::kFixedTransfersFieldNumber,
                          WireElement::kMessage);
        readable &= fixed.has_value();
        fixed_transfers += fixed.value_or(0);
        readable &= ForEachLengthDelimited(
            trace, v1::Trace::kTensorsFieldNumber,
            [&](absl::string_view tensor) {
              ++tensors;
              for (int f : {v1::Tensor::kUseOpsFieldNumber,
                            v1::Tensor::kRecomputeInputsFieldNumber}) {
                const std::optional<int64_t> n =
                    CountElements(tensor, f, WireElement::kVarint);
                readable &= n.has_value();
                relations += n.value_or(0);
              }
            });
      });
  if (!readable) return absl::OkStatus();
  if (operators > kMaxOperators) {
    return TooLargeField(absl::StrCat(field_path, ".operators"),
                         absl::StrCat(operators,
                                      " operators, above the limit "
                                      "of ",
                                      kMaxOperators));
  }
  if (tensors > kMaxTensors) {
    return TooLargeField(
        absl::StrCat(field_path, ".tensors"),
        absl::StrCat(tensors, " tensors, above the limit of ", kMaxTensors));
  }
  if (relations > kMaxRelations) {
    return TooLargeField(
        absl::StrCat(field_path, ".tensors"),
        absl::StrCat(relations,
                     " uses and recompute inputs in all, above the limit of ",
                     kMaxRelations));
  }
  if (fixed_transfers > kMaxFixedTransfers) {
    return TooLargeField(
        absl::StrCat(field_path, ".fixed_transfers"),
        absl::StrCat(fixed_transfers, " fixed transfers, above the limit of ",
                     kMaxFixedTransfers));
  }
  const int64_t memory =
      TraceMemoryBytes(operators, tensors, relations, fixed_transfers) +
      ReplayMemoryBytes(operators, tensors + fixed_transfers,
                        /*timeline=*/false, /*allocator=*/false);
  held_bytes = SaturatingPlus(held_bytes, memory);
  if (limits_.max_memory_bytes > 0 && held_bytes > limits_.max_memory_bytes) {
    return TooLargeField(
        field_path,
        absl::StrCat(
            "planning this trace (", operators, " operators, ", tensors,
            " tensors",
            held_bytes > memory ? ", with the traces before it" : "",
            ") needs at least ",
            absl::StrFormat("%.0f MiB",
                            static_cast<double>(held_bytes) / (1 << 20)),
            ", above this server's limit of ",
            absl::StrFormat(
                "%.0f MiB",
                static_cast<double>(limits_.max_memory_bytes) / (1 << 20)),
            " per call (--max_call_memory_bytes); split the trace or "
            "use a server with a larger limit"));
  }
  return absl::OkStatus();
}

absl::Status ServiceCore::CheckRequestBytes(const v1::PlanRequest*,
                                            absl::string_view bytes) const {
  int64_t held = 0;
  return CheckTraceBytes(bytes, v1::PlanRequest::kTraceFieldNumber, "trace",
                         held);
}

absl::Status ServiceCore::CheckRequestBytes(const v1::SimulateRequest*,
                                            absl::string_view bytes) const {
  int64_t held = 0;
  SLACKSWAP_RETURN_IF_ERROR(CheckTraceBytes(
      bytes, v1::SimulateRequest::kTraceFieldNumber, "trace", held));
  // The plan: an entry per tensor; its schedule fields are output only, but
  // protobuf would build them too.
  absl::Status status;
  const bool readable = ForEachLengthDelimited(
      bytes, v1::SimulateRequest::kPlanFieldNumber,
      [&](absl::string_view plan) {
        for (const auto& [field, name, element] :
             {std::tuple<int, const char*, WireElement>{
                  v1::Plan::kTensorsFieldNumber, "plan.tensors",
                  WireElement::kMessage},
              {v1::Plan::kOffloadOrderFieldNumber, "plan.offload_order",
               WireElement::kVarint},
              {v1::Plan::kPrefetchesFieldNumber, "plan.prefetches",
               WireElement::kMessage},
              {v1::Plan::kRebuildPointsFieldNumber, "plan.rebuild_points",
               WireElement::kMessage}}) {
          if (!status.ok()) return;
          status = AtMost(plan, field, element, kMaxTensors, name,
                          absl::StrCat("more entries than a trace may have "
                                       "tensors (",
                                       kMaxTensors, ")"));
        }
      });
  return readable ? status : absl::OkStatus();
}

absl::Status ServiceCore::CheckRequestBytes(const v1::CompareRequest*,
                                            absl::string_view bytes) const {
  int64_t held = 0;
  SLACKSWAP_RETURN_IF_ERROR(CheckTraceBytes(
      bytes, v1::CompareRequest::kTraceFieldNumber, "trace", held));
  SLACKSWAP_RETURN_IF_ERROR(
      AtMost(bytes, v1::CompareRequest::kBudgetsFieldNumber,
             WireElement::kMessage, kMaxBudgets, "budgets",
             absl::StrCat("must hold 1 to ", kMaxBudgets, " budgets")));
  return AtMost(bytes, v1::CompareRequest::kPoliciesFieldNumber,
                WireElement::kVarint, kMaxPolicies, "policies",
                absl::StrCat("must hold 1 to ", kMaxPolicies, " policies"));
}

absl::Status ServiceCore::CheckRequestBytes(const v1::FrontierRequest*,
                                            absl::string_view bytes) const {
  int64_t held = 0;
  SLACKSWAP_RETURN_IF_ERROR(CheckTraceBytes(
      bytes, v1::FrontierRequest::kTraceFieldNumber, "trace", held));
  return AtMost(bytes, v1::FrontierRequest::kBudgetFractionsFieldNumber,
                WireElement::kFixed64, kMaxFrontierPoints, "budget_fractions",
                absl::StrCat("at most ", kMaxFrontierPoints, " budgets"));
}

absl::Status ServiceCore::CheckRequestBytes(const v1::PlanNodeRequest*,
                                            absl::string_view bytes) const {
  SLACKSWAP_RETURN_IF_ERROR(
      AtMost(bytes, v1::PlanNodeRequest::kJobsFieldNumber,
             WireElement::kMessage, kMaxNodeJobs, "jobs",
             absl::StrCat("must hold 1 to ", kMaxNodeJobs, " jobs")));
  // Every job's trace is held at once.
  int64_t held = 0;
  int i = 0;
  absl::Status status;
  const bool readable = ForEachLengthDelimited(
      bytes, v1::PlanNodeRequest::kJobsFieldNumber, [&](absl::string_view job) {
        if (status.ok()) {
          status = CheckTraceBytes(job, v1::NodeJob::kTraceFieldNumber,
                                   absl::StrCat("jobs[", i, "].trace"), held);
        }
        ++i;
      });
  return readable ? status : absl::OkStatus();
}

absl::Status ServiceCore::CheckRequestBytes(const v1::GenerateTraceRequest*,
                                            absl::string_view) const {
  return absl::OkStatus();  // no repeated fields
}

}  // namespace slackswap
