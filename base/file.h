// File: file.h
//
// Reading a whole file, whatever it is: traces, certificates, /proc and /sys
// files (which report a size of 0).
#ifndef SLACKSWAP_BASE_FILE_H_
#define SLACKSWAP_BASE_FILE_H_

#include <string>

#include "absl/status/statusor.h"

namespace slackswap {

// The whole of `path`. NOT_FOUND "cannot read PATH" if it cannot be opened.
absl::StatusOr<std::string> ReadFileBytes(const std::string& path);

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_FILE_H_
