#include "client/load_generator.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "server/grpc_status.h"
#include "server/service_core.h"
#include "slackswap/v1/service.grpc.pb.h"

namespace slackswap {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i =
      std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[i];
}

}  // namespace

LoadReport RunLoad(const std::shared_ptr<grpc::Channel>& channel,
                   const v1::PlanRequest& request, const LoadOptions& options) {
  std::unique_ptr<v1::PlannerService::Stub> stub;
  if (channel != nullptr) stub = v1::PlannerService::NewStub(channel);
  ServiceCore core;
  std::atomic<int64_t> issued{0};
  std::mutex mu;
  std::vector<double> latencies_ms;
  LoadReport report;
  const absl::Time start = absl::Now();
  const absl::Time end = start + options.duration;
  auto caller = [&] {
    std::vector<double> mine;
    std::map<std::string, int64_t> errors;
    int64_t calls = 0;
    while (absl::Now() < end) {
      if (options.max_requests > 0 &&
          issued.fetch_add(1) >= options.max_requests)
        break;
      const absl::Time t0 = absl::Now();
      grpc::StatusCode code = grpc::StatusCode::OK;
      if (stub != nullptr) {
        grpc::ClientContext context;
        context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::milliseconds(
                                 absl::ToInt64Milliseconds(options.deadline)));
        v1::PlanResponse response;
        code = stub->Plan(&context, request, &response).error_code();
      } else {
        const absl::Time stop_at = t0 + options.deadline;
        auto result =
            core.Plan(request, [stop_at] { return absl::Now() > stop_at; });
        code = static_cast<grpc::StatusCode>(result.status().code());
      }
      ++calls;
      if (code == grpc::StatusCode::OK) {
        mine.push_back(absl::ToDoubleMilliseconds(absl::Now() - t0));
      } else {
        ++errors[GrpcCodeName(code)];
      }
    }
    std::lock_guard<std::mutex> lock(mu);
    latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    for (const auto& [code, n] : errors) report.errors[code] += n;
    report.calls += calls;
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < std::max(1, options.concurrency); ++i)
    threads.emplace_back(caller);
  for (std::thread& t : threads) t.join();
  report.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  report.ok = static_cast<int64_t>(latencies_ms.size());
  report.requests_per_second =
      report.seconds > 0 ? report.ok / report.seconds : 0;
  report.p50_ms = Percentile(latencies_ms, 0.50);
  report.p90_ms = Percentile(latencies_ms, 0.90);
  report.p99_ms = Percentile(latencies_ms, 0.99);
  report.max_ms = latencies_ms.empty() ? 0 : latencies_ms.back();
  return report;
}

}  // namespace slackswap
