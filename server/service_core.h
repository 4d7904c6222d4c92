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
// the deadline passed).
//
// Thread-safe: a ServiceCore holds no mutable state besides the observer,
// which must itself be thread-safe.
#ifndef SLACKSWAP_SERVER_SERVICE_CORE_H_
#define SLACKSWAP_SERVER_SERVICE_CORE_H_

#include <functional>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "planner/policies.h"
#include "simulator/trace.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {

// Told about every plan the service makes (for metrics).
class PlanObserver {
 public:
  virtual ~PlanObserver() = default;
  virtual void Planned(Policy policy, const PlanningResult& result,
                       absl::Duration took) = 0;
};

using StopFunction = std::function<bool()>;

class ServiceCore {
 public:
  // `observer` may be null; otherwise it must outlive the core.
  explicit ServiceCore(PlanObserver* observer = nullptr)
      : observer_(observer) {}

  // `decoded_trace`, when not null, is the request's trace already converted
  // (the server decodes it from the request bytes: TraceFromWire), and
  // request.trace() is not read.
  absl::StatusOr<v1::PlanResponse> Plan(
      const v1::PlanRequest& request, const StopFunction& should_stop,
      const Trace* decoded_trace = nullptr) const;
  absl::StatusOr<v1::SimulateResponse> Simulate(
      const v1::SimulateRequest& request,
      const Trace* decoded_trace = nullptr) const;
  absl::StatusOr<v1::CompareResponse> Compare(
      const v1::CompareRequest& request, const StopFunction& should_stop,
      const Trace* decoded_trace = nullptr) const;
  absl::StatusOr<v1::FrontierResponse> Frontier(
      const v1::FrontierRequest& request, const StopFunction& should_stop,
      const Trace* decoded_trace = nullptr) const;
  absl::StatusOr<v1::GenerateTraceResponse> GenerateTrace(
      const v1::GenerateTraceRequest& request) const;

 private:
  absl::StatusOr<PlanningResult> RunObserved(
      Policy policy, const Trace& trace, const Hardware& hardware,
      int64_t budget, const PolicyOptions& options) const;

  PlanObserver* observer_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_SERVICE_CORE_H_
