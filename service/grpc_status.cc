#include "service/grpc_status.h"

#include <iterator>
#include <string>

#include "google/rpc/error_details.pb.h"
#include "google/rpc/status.pb.h"

namespace slackswap {

const char* GrpcCodeName(grpc::StatusCode code) {
  static const char* const kNames[] = {"OK",
                                       "CANCELLED",
                                       "UNKNOWN",
                                       "INVALID_ARGUMENT",
                                       "DEADLINE_EXCEEDED",
                                       "NOT_FOUND",
                                       "ALREADY_EXISTS",
                                       "PERMISSION_DENIED",
                                       "RESOURCE_EXHAUSTED",
                                       "FAILED_PRECONDITION",
                                       "ABORTED",
                                       "OUT_OF_RANGE",
                                       "UNIMPLEMENTED",
                                       "INTERNAL",
                                       "UNAVAILABLE",
                                       "DATA_LOSS",
                                       "UNAUTHENTICATED"};
  const int i = static_cast<int>(code);
  return i >= 0 && i < static_cast<int>(std::size(kNames)) ? kNames[i]
                                                           : "UNKNOWN";
}

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  std::string message(status.message());
  if (message.size() > kMaxStatusMessageBytes) {
    message.resize(kMaxStatusMessageBytes);
    message += "...";
  }
  // absl and gRPC share the canonical code numbering.
  const auto code = static_cast<grpc::StatusCode>(status.code());
  const std::vector<FieldViolation> violations =
      slackswap::FieldViolationsOf(status);
  if (violations.empty()) return grpc::Status(code, message);
  google::rpc::BadRequest bad_request;
  for (const FieldViolation& v : violations) {
    google::rpc::BadRequest::FieldViolation* out =
        bad_request.add_field_violations();
    out->set_field(v.field);
    out->set_description(v.description);
  }
  google::rpc::Status details;
  details.set_code(static_cast<int32_t>(code));
  details.set_message(message);
  details.add_details()->PackFrom(bad_request);
  return grpc::Status(code, message, details.SerializeAsString());
}

grpc::Status RetryLater(const std::string& message, absl::Duration delay) {
  google::rpc::RetryInfo retry;
  const int64_t nanos = absl::ToInt64Nanoseconds(delay);
  retry.mutable_retry_delay()->set_seconds(nanos / 1'000'000'000);
  retry.mutable_retry_delay()->set_nanos(
      static_cast<int32_t>(nanos % 1'000'000'000));
  google::rpc::Status details;
  details.set_code(static_cast<int32_t>(grpc::StatusCode::RESOURCE_EXHAUSTED));
  details.set_message(message);
  details.add_details()->PackFrom(retry);
  return grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED, message,
                      details.SerializeAsString());
}

std::optional<absl::Duration> RetryDelayOf(const grpc::Status& status) {
  google::rpc::Status details;
  if (status.error_details().empty() ||
      !details.ParseFromString(status.error_details())) {
    return std::nullopt;
  }
  for (const google::protobuf::Any& any : details.details()) {
    google::rpc::RetryInfo retry;
    if (any.UnpackTo(&retry)) {
      return absl::Seconds(retry.retry_delay().seconds()) +
             absl::Nanoseconds(retry.retry_delay().nanos());
    }
  }
  return std::nullopt;
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return WithFieldViolations(
      absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                   status.error_message()),
      FieldViolationsOf(status));
}

std::vector<FieldViolation> FieldViolationsOf(const grpc::Status& status) {
  std::vector<FieldViolation> out;
  google::rpc::Status details;
  if (status.error_details().empty() ||
      !details.ParseFromString(status.error_details())) {
    return out;
  }
  for (const auto& any : details.details()) {
    google::rpc::BadRequest bad_request;
    if (!any.UnpackTo(&bad_request)) continue;
    for (const auto& v : bad_request.field_violations())
      out.push_back({v.field(), v.description()});
  }
  return out;
}

}  // namespace slackswap
