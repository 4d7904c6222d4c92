// File: planner_service.h
//
// slackswap.v1.PlannerService over gRPC (synchronous API: each call runs on a
// thread of the server's pool). Each call is admitted only while fewer than
// `max_concurrent_calls` are running; others get RESOURCE_EXHAUSTED at once.
// Long work (Compare, Frontier, genetic searches) stops when the client
// cancels or the deadline passes.
#ifndef SLACKSWAP_SERVER_PLANNER_SERVICE_H_
#define SLACKSWAP_SERVER_PLANNER_SERVICE_H_

#include <atomic>
#include <functional>

#include "absl/status/status.h"
#include "server/metrics.h"
#include "server/service_core.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {

class PlannerServiceImpl final : public v1::PlannerService::Service {
 public:
  // `metrics` may be null; otherwise it must outlive the service.
  PlannerServiceImpl(int max_concurrent_calls, ServerMetrics* metrics);

  grpc::Status Plan(grpc::ServerContext* context,
                    const v1::PlanRequest* request,
                    v1::PlanResponse* response) override;
  grpc::Status Simulate(grpc::ServerContext* context,
                        const v1::SimulateRequest* request,
                        v1::SimulateResponse* response) override;
  grpc::Status Compare(grpc::ServerContext* context,
                       const v1::CompareRequest* request,
                       v1::CompareResponse* response) override;
  grpc::Status Frontier(grpc::ServerContext* context,
                        const v1::FrontierRequest* request,
                        v1::FrontierResponse* response) override;
  grpc::Status GenerateTrace(grpc::ServerContext* context,
                             const v1::GenerateTraceRequest* request,
                             v1::GenerateTraceResponse* response) override;

  int inflight() const { return inflight_.load(); }

 private:
  grpc::Status Handle(
      Method method, grpc::ServerContext* context,
      const std::function<absl::Status(const StopFunction&)>& work);

  const int max_concurrent_calls_;
  ServerMetrics* metrics_;
  ServiceCore core_;
  std::atomic<int> inflight_{0};
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_PLANNER_SERVICE_H_
