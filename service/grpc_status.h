// File: grpc_status.h
//
// The one place where internal absl::Status values become grpc::Status, and
// back for clients. Codes
// map one to one; field violations (field_violations.h) travel as a
// google.rpc.BadRequest in the google.rpc.Status details; messages are cut to
// a bounded length.
#ifndef SLACKSWAP_SERVICE_GRPC_STATUS_H_
#define SLACKSWAP_SERVICE_GRPC_STATUS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/field_violations.h"
#include "grpcpp/support/status.h"

namespace slackswap {

inline constexpr size_t kMaxStatusMessageBytes = 512;

grpc::Status ToGrpcStatus(const absl::Status& status);

// The other way, for clients: the same code and message, and the BadRequest
// field violations back as FieldViolationsOf(absl::Status) reads them, so a
// remote call fails as the same call in-process does.
absl::Status FromGrpcStatus(const grpc::Status& status);

// RESOURCE_EXHAUSTED for a call refused under load: `message`, and a
// google.rpc.RetryInfo detail asking to retry after `delay` (what clients of
// the Google API design read; gRPC's own retry reads the server's
// grpc-retry-pushback-ms trailer, which the server sets beside it).
grpc::Status RetryLater(const std::string& message, absl::Duration delay);

// The retry delay a status carries (RetryInfo), if any.
std::optional<absl::Duration> RetryDelayOf(const grpc::Status& status);

// The canonical name of a status code ("OK", "INVALID_ARGUMENT", ...);
// "UNKNOWN" for values outside 0..16.
const char* GrpcCodeName(grpc::StatusCode code);

// The BadRequest field violations carried by a grpc::Status (empty if none):
// what a client reads back.
std::vector<FieldViolation> FieldViolationsOf(const grpc::Status& status);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_GRPC_STATUS_H_
