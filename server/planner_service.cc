#include "server/planner_service.h"

#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "simulator/status_macros.h"

namespace slackswap {

PlannerServiceImpl::PlannerServiceImpl(int max_concurrent_calls,
                                       ServerMetrics* metrics)
    : max_concurrent_calls_(max_concurrent_calls),
      metrics_(metrics),
      core_(metrics) {}

grpc::Status PlannerServiceImpl::Handle(
    Method method, grpc::ServerContext* context,
    const std::function<absl::Status(const StopFunction&)>& work) {
  if (inflight_.fetch_add(1) >= max_concurrent_calls_) {
    inflight_.fetch_sub(1);
    if (metrics_ != nullptr)
      metrics_->CallRejected(method, grpc::StatusCode::RESOURCE_EXHAUSTED);
    return grpc::Status(
        grpc::StatusCode::RESOURCE_EXHAUSTED,
        absl::StrCat("server busy: ", max_concurrent_calls_,
                     " calls in flight; retry later or on another replica"));
  }
  if (metrics_ != nullptr) metrics_->CallStarted();
  const absl::Time start = absl::Now();
  const auto deadline = context->deadline();
  auto deadline_passed = [deadline] {
    return std::chrono::system_clock::now() > deadline;
  };
  const StopFunction should_stop = [context, deadline_passed] {
    return context->IsCancelled() || deadline_passed();
  };
  absl::Status status = work(should_stop);
  if (absl::IsCancelled(status) && deadline_passed()) {
    status = absl::DeadlineExceededError(
        "the deadline passed before the work was done");
  }
  grpc::Status result = ToGrpcStatus(status);
  inflight_.fetch_sub(1);
  if (metrics_ != nullptr)
    metrics_->CallFinished(method, result.error_code(), absl::Now() - start);
  return result;
}

grpc::Status PlannerServiceImpl::Plan(grpc::ServerContext* context,
                                      const v1::PlanRequest* request,
                                      v1::PlanResponse* response) {
  return Handle(
      Method::kPlan, context, [&](const StopFunction& stop) -> absl::Status {
        SLACKSWAP_ASSIGN_OR_RETURN(*response, core_.Plan(*request, stop));
        return absl::OkStatus();
      });
}

grpc::Status PlannerServiceImpl::Simulate(grpc::ServerContext* context,
                                          const v1::SimulateRequest* request,
                                          v1::SimulateResponse* response) {
  return Handle(
      Method::kSimulate, context, [&](const StopFunction&) -> absl::Status {
        SLACKSWAP_ASSIGN_OR_RETURN(*response, core_.Simulate(*request));
        return absl::OkStatus();
      });
}

grpc::Status PlannerServiceImpl::Compare(grpc::ServerContext* context,
                                         const v1::CompareRequest* request,
                                         v1::CompareResponse* response) {
  return Handle(
      Method::kCompare, context, [&](const StopFunction& stop) -> absl::Status {
        SLACKSWAP_ASSIGN_OR_RETURN(*response, core_.Compare(*request, stop));
        return absl::OkStatus();
      });
}

grpc::Status PlannerServiceImpl::Frontier(grpc::ServerContext* context,
                                          const v1::FrontierRequest* request,
                                          v1::FrontierResponse* response) {
  return Handle(Method::kFrontier, context,
                [&](const StopFunction& stop) -> absl::Status {
                  SLACKSWAP_ASSIGN_OR_RETURN(*response,
                                             core_.Frontier(*request, stop));
                  return absl::OkStatus();
                });
}

grpc::Status PlannerServiceImpl::GenerateTrace(
    grpc::ServerContext* context, const v1::GenerateTraceRequest* request,
    v1::GenerateTraceResponse* response) {
  return Handle(Method::kGenerateTrace, context,
                [&](const StopFunction&) -> absl::Status {
                  SLACKSWAP_ASSIGN_OR_RETURN(*response,
                                             core_.GenerateTrace(*request));
                  return absl::OkStatus();
                });
}

}  // namespace slackswap
