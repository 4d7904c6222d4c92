#include "server/call_log.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/json.h"
#include "service/grpc_status.h"

namespace slackswap {
namespace {

// Printable ASCII only, at most `max` bytes: client text never breaks a line
// or grows one without bound.
std::string Printable(absl::string_view text, size_t max) {
  std::string out;
  for (char c : text.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) out += c;
  }
  return out;
}

const char* Level(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::CANCELLED:
      return "info";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "warning";
    default:
      return "error";
  }
}

std::string Millis(absl::Duration d) {
  return absl::StrFormat("%.3f", absl::ToDoubleMilliseconds(d));
}

}  // namespace

void ReadCallMetadata(const grpc::ServerContextBase& context,
                      CallRecord& record) {
  for (const auto& [key, value] : context.client_metadata()) {
    const absl::string_view k(key.data(), key.size());
    const absl::string_view v(value.data(), value.size());
    if (k == "x-request-id") record.request_id = Printable(v, 128);
    if (k == "traceparent") record.traceparent = Printable(v, 128);
  }
  record.peer = Printable(context.peer(), 128);
}

std::string CallLogLine(const CallRecord& r, absl::Time now) {
  std::string line = absl::StrCat(
      "{\"time\":",
      JsonQuote(
          absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", now, absl::UTCTimeZone())),
      ",\"level\":\"", Level(r.code), "\",\"msg\":\"call\",\"method\":\"",
      MethodName(r.method), "\",\"code\":\"", GrpcCodeName(r.code),
      "\",\"duration_ms\":", Millis(r.duration),
      ",\"queue_wait_ms\":", Millis(r.queue_wait));
  auto number = [&](const char* name, int64_t value) {
    if (value >= 0) absl::StrAppend(&line, ",\"", name, "\":", value);
  };
  number("request_bytes", r.request_bytes);
  number("response_bytes", r.response_bytes);
  number("trace_operators", r.trace_operators);
  number("trace_tensors", r.trace_tensors);
  auto text = [&](const char* name, const std::string& value) {
    if (!value.empty())
      absl::StrAppend(&line, ",\"", name, "\":", JsonQuote(value));
  };
  text("request_id", r.request_id);
  text("traceparent", r.traceparent);
  text("peer", r.peer);
  if (r.code != grpc::StatusCode::OK)
    text("error", r.error.substr(0, std::min<size_t>(r.error.size(), 512)));
  return line + "}\n";
}

void CallLog::Write(const CallRecord& record) {
  const std::string line = CallLogLine(record, absl::Now());
  std::lock_guard<std::mutex> lock(mu_);
  std::fwrite(line.data(), 1, line.size(), out_);
  std::fflush(out_);
}

}  // namespace slackswap
