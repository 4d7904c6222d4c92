#include "service/message_io.h"

#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/file.h"
#include "google/protobuf/util/json_util.h"

namespace slackswap {

FileFormat FormatForPath(absl::string_view path) {
  return absl::EndsWith(path, ".json") ? FileFormat::kJson
                                       : FileFormat::kBinary;
}

absl::Status ReadMessageFile(const std::string& path,
                             google::protobuf::Message* message) {
  absl::StatusOr<std::string> read = ReadFileBytes(path);
  if (!read.ok()) return read.status();
  const std::string& bytes = *read;
  if (bytes.size() > (size_t{1} << 31)) {
    return absl::ResourceExhaustedError(
        absl::StrCat(path, ": larger than 2 GiB"));
  }
  const size_t first = bytes.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && bytes[first] == '{') {
    google::protobuf::util::JsonParseOptions options;
    const auto status =
        google::protobuf::util::JsonStringToMessage(bytes, message, options);
    if (!status.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ": not a valid ", message->GetTypeName(),
          " in JSON: ", std::string(status.message()).substr(0, 200)));
    }
    return absl::OkStatus();
  }
  if (!message->ParseFromString(bytes)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a valid binary ", message->GetTypeName()));
  }
  return absl::OkStatus();
}

std::string ToJson(const google::protobuf::Message& message) {
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(message, &out, options);
  return out;
}

absl::Status WriteMessageFile(const std::string& path,
                              const google::protobuf::Message& message,
                              FileFormat format) {
  std::string bytes;
  if (format == FileFormat::kJson) {
    bytes = ToJson(message);
  } else if (!message.SerializeToString(&bytes)) {
    return absl::InternalError("cannot serialize message");
  }
  return WriteFileBytes(path, bytes);
}

}  // namespace slackswap
