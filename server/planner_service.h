// File: planner_service.h
//
// slackswap.v1.PlannerService over gRPC's callback API, with raw (ByteBuffer)
// methods so that the service parses requests itself: a request's trace
// straight from the bytes into the compact trace (TraceFromWire, unless it is
// in a form only protobuf takes), the rest into a per-call protobuf arena, and
// INVALID_ARGUMENT naming the request when the bytes are not a valid message
// (gRPC's own parser would answer UNIMPLEMENTED).
//
// Admission runs on the gRPC thread the call arrives on and never waits: a
// call over `max_concurrent_calls` gets RESOURCE_EXHAUSTED at once. Admitted
// calls run in arrival order on `planning_threads` threads of the service's
// own, so that planning never occupies gRPC's threads and each call waits only
// for the calls ahead of it. Long work (Compare, Frontier, genetic searches)
// stops when the client cancels or the deadline passes; a call whose client
// left while it waited is not started.
#ifndef SLACKSWAP_SERVER_PLANNER_SERVICE_H_
#define SLACKSWAP_SERVER_PLANNER_SERVICE_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/call_log.h"
#include "server/metrics.h"
#include "service/rpcs.h"
#include "service/service_core.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {

// gRPC's generated service with every method raw: one layer per rpc, and one
// handler each below, each a line that serves its row of service/rpcs.h.
using RawPlannerService = v1::PlannerService::WithRawCallbackMethod_Plan<
    v1::PlannerService::WithRawCallbackMethod_Simulate<
        v1::PlannerService::WithRawCallbackMethod_Compare<
            v1::PlannerService::WithRawCallbackMethod_Frontier<
                v1::PlannerService::WithRawCallbackMethod_GenerateTrace<
                    v1::PlannerService::WithRawCallbackMethod_PlanNode<
                        v1::PlannerService::Service>>>>>>;

class PlannerServiceImpl final : public RawPlannerService {
 public:
  // `planning_threads` <= 0: one per CPU this process may use (UsableCpus(),
  // which heeds affinity and a container's CPU limit). `metrics` may be null;
  // otherwise it must outlive the service.
  // `limits` bound each call's memory and work (service_core.h);
  // `max_call_duration` (0: none) bounds its time whatever the client's
  // deadline: past it the call gets DEADLINE_EXCEEDED. A request or a
  // response over `max_message_bytes` (0: none) gets RESOURCE_EXHAUSTED
  // naming which, and is counted like any other call.
  PlannerServiceImpl(int max_concurrent_calls, int planning_threads,
                     ServerMetrics* metrics, CallLimits limits = CallLimits(),
                     absl::Duration max_call_duration = absl::ZeroDuration(),
                     int64_t max_message_bytes = 0, CallLog* call_log = nullptr,
                     int64_t compress_from_bytes = 0);
  // Runs what is queued, then joins the planning threads. The gRPC server
  // must have been shut down first.
  ~PlannerServiceImpl() override;

  grpc::ServerUnaryReactor* Plan(grpc::CallbackServerContext* context,
                                 const grpc::ByteBuffer* request,
                                 grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Simulate(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Compare(grpc::CallbackServerContext* context,
                                    const grpc::ByteBuffer* request,
                                    grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Frontier(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* GenerateTrace(grpc::CallbackServerContext* context,
                                          const grpc::ByteBuffer* request,
                                          grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* PlanNode(grpc::CallbackServerContext* context,
                                     const grpc::ByteBuffer* request,
                                     grpc::ByteBuffer* response) override;

  // Calls admitted and not yet finished (running or waiting to run).
  int inflight() const { return inflight_.load(); }
  // From now on every new call gets UNAVAILABLE ("draining") before it is
  // admitted; calls already admitted run on.
  void StopAdmitting() { draining_.store(true); }
  // When the last call arrived (refused ones included); long ago if none
  // has.
  absl::Time last_arrival() const {
    return absl::FromUnixNanos(last_arrival_ns_.load());
  }
  int planning_threads() const { return static_cast<int>(workers_.size()); }

 private:
  // Parses the request, runs the method's ServiceCore call on it
  // (service/rpcs.h) and serializes its response.
  template <Method M>
  grpc::ServerUnaryReactor* Serve(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response);
  // Admits the call or refuses it (over the concurrency limit, or a request
  // of `request_bytes` over max_message_bytes), then queues `work` to run in
  // arrival order and finish the call with its status.
  grpc::ServerUnaryReactor* Handle(
      Method method, grpc::CallbackServerContext* context,
      int64_t request_bytes,
      std::function<absl::Status(const StopFunction&, CallRecord&)> work);
  // Finishes a call refused before it started (record.duration set).
  grpc::ServerUnaryReactor* Refuse(grpc::CallbackServerContext* context,
                                   grpc::ServerUnaryReactor* reactor,
                                   const grpc::Status& status,
                                   CallRecord& record);
  // Counts and logs a finished call, and tells gRPC's retry whether to retry
  // RESOURCE_EXHAUSTED: after the pushback when the server was busy, never
  // when the request itself is over a limit.
  void Finish(grpc::CallbackServerContext* context,
              grpc::ServerUnaryReactor* reactor, const grpc::Status& status,
              CallRecord& record);

  void Submit(std::function<void()> job);
  // A planning thread: runs queued jobs in order until stopped.
  void RunWorker();

  const int max_concurrent_calls_;
  const absl::Duration max_call_duration_;
  const int64_t max_message_bytes_;
  // Responses of at least this many bytes are sent gzip-compressed to
  // clients that accept it (0: none).
  const int64_t compress_from_bytes_;
  ServerMetrics* metrics_;
  CallLog* call_log_;
  ServiceCore core_;
  std::atomic<int> inflight_{0};
  std::atomic<bool> draining_{false};
  std::atomic<int64_t> last_arrival_ns_{std::numeric_limits<int64_t>::min()};

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_PLANNER_SERVICE_H_
