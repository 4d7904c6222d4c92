#include "client/load_generator.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/file.h"
#include "base/usable_cpus.h"
#include "grpcpp/generic/generic_stub.h"
#include "service/grpc_status.h"
#include "service/rpcs.h"
#include "service/service_core.h"

namespace slackswap {
namespace {

double Percentile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  const size_t i =
      std::min(sorted.size() - 1, static_cast<size_t>(q * sorted.size()));
  return sorted[i];
}

double OwnCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) +
         static_cast<double>(ts.tv_nsec) * 1e-9;
}

// CPU time of this process and of the server's over the measured stretch.
class CpuMeter {
 public:
  explicit CpuMeter(int server_pid) : server_pid_(server_pid) {}

  // Marks the end of the warm-up: the first call counts. Thread-safe.
  void Start() {
    std::call_once(started_, [this] {
      own_start_ = OwnCpuSeconds();
      if (server_pid_ > 0) {
        const absl::StatusOr<double> server = ProcessCpuSeconds(server_pid_);
        if (server.ok()) server_start_ = *server;
      }
      running_ = true;
    });
  }

  // Reads the meters again once every thread has finished.
  void Finish(LoadReport& report) const {
    if (!running_) return;  // nothing was measured
    report.cpu_seconds = OwnCpuSeconds() - own_start_;
    if (server_start_.has_value()) {
      const absl::StatusOr<double> server = ProcessCpuSeconds(server_pid_);
      if (server.ok()) report.server_cpu_seconds = *server - *server_start_;
    }
  }

 private:
  const int server_pid_;
  std::once_flag started_;
  bool running_ = false;  // written once, inside call_once
  double own_start_ = 0;
  std::optional<double> server_start_;
};

// Sorts the latencies and fills the report's rates and percentiles.
void Summarize(std::vector<double>& latencies_ms, absl::Time start,
               LoadReport& report) {
  report.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  std::sort(latencies_ms.begin(), latencies_ms.end());
  report.ok = static_cast<int64_t>(latencies_ms.size());
  report.requests_per_second =
      report.seconds > 0 ? report.ok / report.seconds : 0;
  report.p50_ms = Percentile(latencies_ms, 0.50);
  report.p90_ms = Percentile(latencies_ms, 0.90);
  report.p99_ms = Percentile(latencies_ms, 0.99);
  report.max_ms = latencies_ms.empty() ? 0 : latencies_ms.back();
}

// In-process: `concurrency` callers, each sending its next call the moment
// the previous one returns, and planning threads that take the calls in the
// order they were sent, as the server's queue does, planning each with the
// same ServiceCore. A call's latency counts from its sending, so it includes
// the wait for the calls ahead of it.
LoadReport RunLocal(const v1::PlanRequest& request,
                    const LoadOptions& options) {
  ServiceCore core;
  const int callers = std::max(1, options.concurrency);
  const int threads =
      std::min(callers, options.planning_threads > 0 ? options.planning_threads
                                                     : UsableCpus());
  LoadReport report;
  report.planning_threads = threads;
  CpuMeter meter(options.server_pid);
  const absl::Time start = absl::Now() + options.warmup;
  const absl::Time end = start + options.duration;
  std::atomic<int64_t> issued{0};  // calls sent after the warm-up
  std::mutex mu;
  // When each call not yet taken by a planning thread was sent, oldest first.
  std::deque<absl::Time> waiting;    // guarded by mu
  std::vector<double> latencies_ms;  // guarded by mu
  // A caller sends a call at `sent`, unless the run is over.
  auto send = [&](absl::Time sent) {
    if (sent >= end) return;
    if (sent >= start && options.max_requests > 0 &&
        issued.fetch_add(1) >= options.max_requests)
      return;
    std::lock_guard<std::mutex> lock(mu);
    waiting.push_back(sent);
  };
  for (int i = 0; i < callers; ++i) send(absl::Now());
  // Each thread takes the oldest call waiting. One that finds none is done:
  // a caller's next call is sent before its thread looks again, so while the
  // run lasts every thread looking for work finds one.
  auto planner = [&] {
    std::vector<double> mine;
    std::map<std::string, int64_t> errors;
    int64_t calls = 0;
    for (;;) {
      absl::Time sent;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (waiting.empty()) break;
        sent = waiting.front();
        waiting.pop_front();
      }
      const bool counted = sent >= start;
      if (counted) meter.Start();
      const absl::Time stop_at = sent + options.deadline;
      auto result =
          core.Plan(request, [stop_at] { return absl::Now() > stop_at; });
      const absl::Time done = absl::Now();
      if (counted) {
        ++calls;
        const auto code = static_cast<grpc::StatusCode>(result.status().code());
        if (code == grpc::StatusCode::OK) {
          mine.push_back(absl::ToDoubleMilliseconds(done - sent));
        } else {
          ++errors[GrpcCodeName(code)];
        }
      }
      send(done);
    }
    std::lock_guard<std::mutex> lock(mu);
    latencies_ms.insert(latencies_ms.end(), mine.begin(), mine.end());
    for (const auto& [code, n] : errors) report.errors[code] += n;
    report.calls += calls;
  };
  std::vector<std::thread> pool;
  pool.reserve(threads);
  for (int i = 0; i < threads; ++i) pool.emplace_back(planner);
  for (std::thread& t : pool) t.join();
  Summarize(latencies_ms, start, report);
  meter.Finish(report);
  return report;
}

// One call in flight on the completion queue.
struct PendingCall {
  grpc::ClientContext context;
  std::unique_ptr<grpc::GenericClientAsyncResponseReader> reader;
  grpc::ByteBuffer response;
  grpc::Status status;
  absl::Time started;
};

// Against a server: one thread keeps `concurrency` calls in flight on a
// completion queue, sending the request serialized once, so that the load
// generator takes as little as possible of the cores it may share with the
// server. Responses are counted by status, not parsed.
LoadReport RunRemote(const std::shared_ptr<grpc::Channel>& channel,
                     const v1::PlanRequest& request,
                     const LoadOptions& options) {
  const std::string bytes = request.SerializeAsString();
  grpc::Slice slice(bytes.data(), bytes.size());
  const grpc::ByteBuffer payload(&slice, 1);
  grpc::GenericStub stub(channel);
  grpc::CompletionQueue cq;
  // Connecting is not part of any call's latency.
  channel->WaitForConnected(std::chrono::system_clock::now() +
                            std::chrono::seconds(10));
  LoadReport report;
  CpuMeter meter(options.server_pid);
  std::vector<double> latencies_ms;
  const absl::Time start = absl::Now() + options.warmup;
  const absl::Time end = start + options.duration;
  int64_t issued = 0;  // calls started after the warm-up
  auto may_start = [&] {
    return absl::Now() < end &&
           (options.max_requests == 0 || issued < options.max_requests);
  };
  auto start_call = [&] {
    auto call = std::make_unique<PendingCall>();
    call->context.set_deadline(
        std::chrono::system_clock::now() +
        std::chrono::milliseconds(absl::ToInt64Milliseconds(options.deadline)));
    call->started = absl::Now();
    if (call->started >= start) {
      meter.Start();
      ++issued;
    }
    call->reader = stub.PrepareUnaryCall(
        &call->context, MethodPath(Method::kPlan), payload, &cq);
    call->reader->StartCall();
    PendingCall* tag = call.release();
    tag->reader->Finish(&tag->response, &tag->status, tag);
  };
  int in_flight = 0;
  for (int i = 0; i < std::max(1, options.concurrency) && may_start(); ++i) {
    start_call();
    ++in_flight;
  }
  void* tag = nullptr;
  bool ok = false;
  while (in_flight > 0 && cq.Next(&tag, &ok)) {
    std::unique_ptr<PendingCall> call(static_cast<PendingCall*>(tag));
    --in_flight;
    if (call->started >= start) {  // not a warm-up call
      ++report.calls;
      if (call->status.ok()) {
        latencies_ms.push_back(
            absl::ToDoubleMilliseconds(absl::Now() - call->started));
      } else {
        ++report.errors[GrpcCodeName(call->status.error_code())];
      }
    }
    if (may_start()) {
      start_call();
      ++in_flight;
    }
  }
  cq.Shutdown();
  while (cq.Next(&tag, &ok)) {
  }
  Summarize(latencies_ms, start, report);
  meter.Finish(report);
  return report;
}

}  // namespace

absl::StatusOr<double> ProcessCpuSeconds(int pid) {
  const std::string stat =
      ReadFileBytes(absl::StrCat("/proc/", pid, "/stat")).value_or("");
  // pid (comm) state ppid ...: the name may hold spaces and parentheses, so
  // the fields are counted from the last ')'. utime and stime are fields 14
  // and 15, the 12th and 13th after it.
  const size_t name_end = stat.rfind(')');
  if (pid <= 0 || name_end == std::string::npos)
    return absl::NotFoundError(absl::StrCat("no process ", pid));
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(name_end + 1), ' ', absl::SkipEmpty());
  int64_t utime = 0;
  int64_t stime = 0;
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::NotFoundError(
        absl::StrCat("cannot read the CPU time of process ", pid));
  }
  return static_cast<double>(utime + stime) /
         static_cast<double>(sysconf(_SC_CLK_TCK));
}

LoadReport RunLoad(const std::shared_ptr<grpc::Channel>& channel,
                   const v1::PlanRequest& request, const LoadOptions& options) {
  return channel == nullptr ? RunLocal(request, options)
                            : RunRemote(channel, request, options);
}

}  // namespace slackswap
