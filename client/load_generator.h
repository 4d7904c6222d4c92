// File: load_generator.h
//
// `slackswap bench-server`: N concurrent callers sending the same Plan
// request for a duration or a count, reporting requests per second, latency
// percentiles and errors by status code. Against a server, or in-process
// (the same ServiceCore without gRPC, queued the way the server queues calls)
// for comparison. Loops are bounded by both the count and the duration, and
// only the given address is called.
#ifndef SLACKSWAP_CLIENT_LOAD_GENERATOR_H_
#define SLACKSWAP_CLIENT_LOAD_GENERATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "grpcpp/grpcpp.h"
#include "slackswap/v1/service.pb.h"

namespace slackswap {

struct LoadOptions {
  int concurrency = 4;
  absl::Duration duration = absl::Seconds(10);
  // Stop after this many calls in all (0: only the duration bounds the run).
  int64_t max_requests = 0;
  absl::Duration deadline = absl::Seconds(30);
  // Calls started in this first stretch warm the connection, the server's
  // threads and its allocator and are left out of the report; `duration` and
  // `max_requests` count from its end.
  absl::Duration warmup = absl::ZeroDuration();
  // When > 0, the process id of the server (same machine): its CPU time over
  // the measured stretch is reported too.
  int server_pid = 0;
  // In-process only: how many threads plan the callers' calls, taking them in
  // arrival order as the server's planning threads do (0: one per CPU this
  // process may use, the server's default; base/usable_cpus.h). Never more
  // than `concurrency`: with a thread per caller each thread is one caller.
  int planning_threads = 0;
};

struct LoadReport {
  int64_t calls = 0;
  int64_t ok = 0;
  double seconds = 0;
  double requests_per_second = 0;  // successful calls per second
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;  // of successful calls
  std::map<std::string, int64_t> errors;  // by gRPC status code name
  // CPU time (user + system, every thread) from the end of the warm-up to
  // the end of the run: of this process (in-process: the planning itself),
  // and of the server process when LoadOptions::server_pid is set. Calls
  // still running when the warm-up ends add a little that no counted call
  // accounts for (at most `concurrency` calls' worth).
  double cpu_seconds = 0;
  std::optional<double> server_cpu_seconds;
  // In-process: the threads that planned (0 against a server).
  int planning_threads = 0;
};

// CPU time (user + system) that process `pid` on this machine has used, from
// /proc, at clock-tick resolution. NOT_FOUND when there is no such process.
absl::StatusOr<double> ProcessCpuSeconds(int pid);

// Against a server through `channel` (null: in-process).
LoadReport RunLoad(const std::shared_ptr<grpc::Channel>& channel,
                   const v1::PlanRequest& request, const LoadOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_LOAD_GENERATOR_H_
