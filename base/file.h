// File: file.h
//
// Reading a whole file, whatever it is (traces, certificates, /proc and /sys
// files, which report a size of 0), and writing one.
#ifndef SLACKSWAP_BASE_FILE_H_
#define SLACKSWAP_BASE_FILE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace slackswap {

// The whole of `path`. NOT_FOUND "cannot read PATH" if it cannot be opened.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

// Writes `bytes` to `path`, replacing it. PERMISSION_DENIED "cannot write
// PATH" if it cannot be opened; DATA_LOSS "short write to PATH" if the write
// or the close fails.
absl::Status WriteFileBytes(const std::string& path, absl::string_view bytes);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_FILE_H_
