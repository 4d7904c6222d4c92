// File: load_generator.h
//
// `slackswap bench-server`: N concurrent callers sending the same Plan
// request for a duration or a count, reporting requests per second, latency
// percentiles and errors by status code. Against a server, or in-process
// (the same ServiceCore without gRPC) for comparison. Loops are bounded by
// both the count and the duration, and only the given address is called.
#ifndef SLACKSWAP_CLIENT_LOAD_GENERATOR_H_
#define SLACKSWAP_CLIENT_LOAD_GENERATOR_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

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
};

struct LoadReport {
  int64_t calls = 0;
  int64_t ok = 0;
  double seconds = 0;
  double requests_per_second = 0;  // successful calls per second
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, max_ms = 0;  // of successful calls
  std::map<std::string, int64_t> errors;  // by gRPC status code name
};

// Against a server through `channel` (null: in-process).
LoadReport RunLoad(const std::shared_ptr<grpc::Channel>& channel,
                   const v1::PlanRequest& request, const LoadOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_LOAD_GENERATOR_H_
