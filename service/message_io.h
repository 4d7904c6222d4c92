// File: message_io.h
//
// Reading and writing slackswap.v1 messages (traces, plans, hardware) as files,
// in binary protobuf or protobuf JSON.
#ifndef SLACKSWAP_SERVICE_MESSAGE_IO_H_
#define SLACKSWAP_SERVICE_MESSAGE_IO_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "google/protobuf/message.h"

namespace slackswap {

enum class FileFormat { kBinary, kJson };

// kJson for names ending in ".json", kBinary otherwise.
FileFormat FormatForPath(absl::string_view path);

// Parses `path` into `message`: JSON if the first non-blank byte is '{',
// binary otherwise. NOT_FOUND if the file cannot be opened; INVALID_ARGUMENT
// naming the file if it does not parse; RESOURCE_EXHAUSTED above 2 GiB.
absl::Status ReadMessageFile(const std::string& path,
                             google::protobuf::Message* message);

// Writes `message` to `path` (replacing it) in `format`. JSON output uses the
// proto field names and ends with a newline.
absl::Status WriteMessageFile(const std::string& path,
                              const google::protobuf::Message& message,
                              FileFormat format);

// The message as protobuf JSON (proto field names, two-space indent).
std::string ToJson(const google::protobuf::Message& message);

}  // namespace slackswap

#endif  // SLACKSWAP_SERVICE_MESSAGE_IO_H_
