// File: service_core.h
//
// What each PlannerService RPC does, independent of transport: a request
// message in, a response message or an absl::Status out. The gRPC service
// (planner_service.h) calls it with a stop function tied to the call's
// deadline and cancellation; the CLI calls it in-process, so both print the
// same results.
//
// Errors: INVALID_ARGUMENT with field violations (field_violations.h),
// RESOURCE_EXHAUSTED for traces over the size limits, CANCELLED when
// `should_stop` returned true (the caller maps it to DEADLINE_EXCEEDED where
// the deadline passed). `should_stop` is polled between plans and, through a
// ScopedStop (base/stop.h) around each call, from inside every replay and
// linear-program solve, so that a call stops within milliseconds of it.
//
// Thread-safe: a ServiceCore holds no mutable state besides the observer,
// which must itself be thread-safe.
#ifndef SLACKSWAP_SERVICE_SERVICE_CORE_H_
#define SLACKSWAP_SERVICE_SERVICE_CORE_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "planner/policies.h"
#include "service/call_cost.h"
#include "service/method.h"
#include "simulator/trace.h"
#include "simulator/workload.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {

// Told about every plan the service makes (for metrics).
class PlanObserver {
 public:
  virtual ~PlanObserver() = default;
  // `call`: the RPC the plan was made for: a Plan call's answer, or one
  // entry of a comparison, one point of a frontier or one job of a node
  // (what-ifs, which must not skew the quality of the plans that clients
  // apply).
  virtual void Planned(Method call, Policy policy, const PlanningResult& result,
                       absl::Duration took) = 0;
};

// Requests' counts (INVALID_ARGUMENT past them).
inline constexpr int kMaxBudgets = 32;   // CompareRequest.budgets
inline constexpr int kMaxPolicies = 16;  // CompareRequest.policies
inline constexpr int kMaxFrontierPoints =
    64;  // FrontierRequest.budget_fractions

// A request whose traces were decoded from its bytes (the server decodes them
// with TraceFromWire and parses the rest without them): the message, whose
// trace fields are not read, and the traces.
template <typename Request>
struct Decoded {
  const Request& message;
  // Requests with a `trace`: it, decoded.
  const Trace* trace = nullptr;
  // PlanNodeRequest: each job's trace, decoded, in job order.
  const std::vector<Trace>* job_traces = nullptr;
};

class ServiceCore {
 public:
  // `observer` may be null; otherwise it must outlive the core.
  explicit ServiceCore(PlanObserver* observer = nullptr,
                       CallLimits limits = CallLimits())
      : observer_(observer), limits_(limits) {}

  // Each call in two forms, one row each in service/rpcs.h: a message whose
  // traces are converted here (the CLI's), and a Decoded request (the
  // server's). Both answer alike.
  absl::StatusOr<v1::PlanResponse> Plan(const v1::PlanRequest& request,
                                        const StopFunction& should_stop) const;
  absl::StatusOr<v1::PlanResponse> Plan(const Decoded<v1::PlanRequest>& request,
                                        const StopFunction& should_stop) const;
  absl::StatusOr<v1::SimulateResponse> Simulate(
      const v1::SimulateRequest& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::SimulateResponse> Simulate(
      const Decoded<v1::SimulateRequest>& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& request, const StopFunction& should_stop) const;
  absl::StatusOr<v1::CompareResponse> Compare(
      const Decoded<v1::CompareRequest>& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::FrontierResponse> Frontier(
      const v1::FrontierRequest& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::FrontierResponse> Frontier(
      const Decoded<v1::FrontierRequest>& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::PlanNodeResponse> PlanNode(
      const v1::PlanNodeRequest& request,
      const StopFunction& should_stop) const;
  absl::StatusOr<v1::PlanNodeResponse> PlanNode(
      const Decoded<v1::PlanNodeRequest>& request,
      const StopFunction& should_stop) const;
  // Makes no plan: `should_stop` is not asked.
  absl::StatusOr<v1::GenerateTraceResponse> GenerateTrace(
      const v1::GenerateTraceRequest& request,
      const StopFunction& should_stop = nullptr) const;
  absl::StatusOr<v1::GenerateTraceResponse> GenerateTrace(
      const Decoded<v1::GenerateTraceRequest>& request,
      const StopFunction& should_stop) const {
    return GenerateTrace(request.message, should_stop);
  }

  // Checks a serialized request (of the type the first argument points to;
  // null is fine) from its bytes, before protobuf builds it
  // (request_precheck.cc): the counts of its repeated fields and its traces'
  // sizes, refused as validating the message would refuse them, and each
  // trace's memory estimate alone (RESOURCE_EXHAUSTED naming it). OK for
  // bytes it cannot read: protobuf then refuses them.
  absl::Status CheckRequestBytes(const v1::PlanRequest*,
                                 absl::string_view bytes) const;
  absl::Status CheckRequestBytes(const v1::SimulateRequest*,
                                 absl::string_view bytes) const;
  absl::Status CheckRequestBytes(const v1::CompareRequest*,
                                 absl::string_view bytes) const;
  absl::Status CheckRequestBytes(const v1::FrontierRequest*,
                                 absl::string_view bytes) const;
  absl::Status CheckRequestBytes(const v1::PlanNodeRequest*,
                                 absl::string_view bytes) const;
  absl::Status CheckRequestBytes(const v1::GenerateTraceRequest*,
                                 absl::string_view bytes) const;

 private:
  // CheckCallCost (call_cost.h) with this core's limits.
  absl::Status CheckCost(const Trace& trace, const Hardware& hardware,
                         const std::vector<Policy>& policies,
                         int64_t runs_per_policy, const PolicyOptions& options,
                         const CostContext& context) const {
    return CheckCallCost(limits_, trace, hardware, policies, runs_per_policy,
                         options, context);
  }
  // The trace in `trace_bytes` (every occurrence of the field, as protobuf
  // merges them) within the trace limits and, with `held_bytes` of other
  // traces, the memory limit; adds its estimate to `held_bytes`.
  absl::Status CheckTraceBytes(absl::string_view message, int trace_field,
                               absl::string_view field_path,
                               int64_t& held_bytes) const;
  // The calls, with the request's trace decoded (non-null) or to be
  // converted from the message (null).
  absl::StatusOr<v1::PlanResponse> RunPlan(const v1::PlanRequest& request,
                                           const Trace* decoded,
                                           const StopFunction& stop) const;
  absl::StatusOr<v1::SimulateResponse> RunSimulate(
      const v1::SimulateRequest& request, const Trace* decoded,
      const StopFunction& stop) const;
  absl::StatusOr<v1::CompareResponse> RunCompare(
      const v1::CompareRequest& request, const Trace* decoded,
      const StopFunction& stop) const;
  absl::StatusOr<v1::FrontierResponse> RunFrontier(
      const v1::FrontierRequest& request, const Trace* decoded,
      const StopFunction& stop) const;
  absl::StatusOr<v1::PlanNodeResponse> RunPlanNode(
      const v1::PlanNodeRequest& request, const std::vector<Trace>* decoded,
      const StopFunction& stop) const;
  absl::StatusOr<PlanningResult> RunObserved(
      Method call, Policy policy, const Trace& trace, const Hardware& hardware,
      int64_t budget, const PolicyOptions& options) const;

  PlanObserver* observer_;
  const CallLimits limits_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_SERVICE_CORE_H_
