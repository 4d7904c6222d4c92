// File: wire_counts.h
//
// Counting a serialized message's repeated fields from its bytes, before
// protobuf builds an object per element: a request of 32 MiB can hold 16
// million empty messages, which parse into more than a gigabyte. The server
// checks a request's counts and its traces' sizes this way first
// (request_precheck.h).
//
// The reader takes every form protobuf parses: varints in any length up to
// ten bytes, packed and unpacked repeated scalars, groups (skipped, nested up
// to 100 deep). Bytes it cannot read are not a valid message for protobuf
// either.
//
// Example: the jobs of a PlanNodeRequest, and each job's trace's operators.
//   std::optional<int64_t> jobs = CountElements(bytes, 2,
//   WireElement::kMessage); ForEachLengthDelimited(bytes, 2,
//   [&](absl::string_view job) { ... });
#ifndef SLACKSWAP_SERVICE_WIRE_COUNTS_H_
#define SLACKSWAP_SERVICE_WIRE_COUNTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"

namespace slackswap {

// What one element of a repeated field is on the wire.
enum class WireElement {
  kMessage,  // a message or string: one length-delimited field each
  kVarint,   // int32, int64, enum, bool: packed or one varint each
  kFixed64,  // double, fixed64: packed or eight bytes each
  kFixed32,  // float, fixed32: packed or four bytes each
};

// The elements of field `field` at the top level of `message`, over all its
// occurrences. Null: the bytes are not a valid message. O(bytes), no
// allocation.
std::optional<int64_t> CountElements(absl::string_view message, int field,
                                     WireElement element);

// Calls `visit` with the payload of each length-delimited occurrence of
// `field` at the top level of `message`, in order. False: the bytes are not
// a valid message (`visit` may have been called for occurrences before).
bool ForEachLengthDelimited(absl::string_view message, int field,
                            absl::FunctionRef<void(absl::string_view)> visit);

// Copies `message` without the occurrences of `field` at its top level into
// `rest`, byte for byte (it parses as the message without that field).
// False: the bytes are not a valid message.
bool CopyWithoutField(absl::string_view message, int field, std::string& rest);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_WIRE_COUNTS_H_
