// File: call_log.h
//
// One structured line per call, JSON, for log pipelines (Loki, Cloud
// Logging, Elasticsearch) to index and for people to grep:
//
//   {"time":"2026-12-01T11:30:00.123456Z","level":"info","msg":"call",
//    "method":"Plan","code":"OK","duration_ms":2.104,"queue_wait_ms":0.012,
//    "request_bytes":67315,"response_bytes":2511,"trace_operators":968,
//    "trace_tensors":483,"request_id":"4f1c...","traceparent":"00-...",
//    "peer":"ipv4:10.0.3.7:51234"}
//
// "level" is "info" for OK, INVALID_ARGUMENT and CANCELLED (the caller's
// doing), "warning" for RESOURCE_EXHAUSTED and DEADLINE_EXCEEDED, "error"
// otherwise; a failed call adds "error" with its message (at most 512
// bytes). request_id is the caller's `x-request-id` metadata and
// traceparent its W3C trace context (printable ASCII, at most 128 bytes
// each); fields the call does not have are left out (a call refused before
// its trace was read has no trace size).
#ifndef SLACKSWAP_SERVER_CALL_LOG_H_
#define SLACKSWAP_SERVER_CALL_LOG_H_

#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "absl/time/time.h"
#include "grpcpp/server_context.h"
#include "server/metrics.h"

namespace slackswap {

struct CallRecord {
  Method method = Method::kPlan;
  grpc::StatusCode code = grpc::StatusCode::OK;
  std::string error;  // the status message of a failed call
  absl::Duration duration;
  absl::Duration queue_wait;
  int64_t request_bytes = -1;  // -1: unknown (left out)
  int64_t response_bytes = -1;
  int32_t trace_operators = -1;
  int32_t trace_tensors = -1;
  std::string request_id;
  std::string traceparent;
  std::string peer;
};

// Fills the request id, trace context and peer from the call's metadata.
void ReadCallMetadata(const grpc::ServerContextBase& context,
                      CallRecord& record);

// The record as one JSON line (with the newline), stamped `now`.
std::string CallLogLine(const CallRecord& record, absl::Time now);

// Writes lines to a stream, whole lines at a time from any thread.
class CallLog {
 public:
  explicit CallLog(std::FILE* out) : out_(out) {}
  void Write(const CallRecord& record);

 private:
  std::mutex mu_;
  std::FILE* out_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SERVER_CALL_LOG_H_
