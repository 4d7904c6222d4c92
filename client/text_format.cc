#include "client/text_format.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "simulator/event_model.h"

namespace slackswap {

std::string Gigabytes(int64_t bytes) {
  if (bytes == kUnlimitedBytes) return "unlimited";
  // Below 0.01 GB (which would print as 0.00 GB): MB, then bytes.
  if (bytes < 10'000 && bytes > -10'000) return absl::StrCat(bytes, " B");
  if (bytes < 10'000'000 && bytes > -10'000'000)
    return absl::StrFormat("%.2f MB", static_cast<double>(bytes) / 1e6);
  return absl::StrFormat("%.2f GB", static_cast<double>(bytes) / 1e9);
}

std::string Millis(int64_t ns) {
  return absl::StrFormat("%.2f ms", static_cast<double>(ns) / 1e6);
}

std::string GigabytesCell(int64_t bytes) {
  return absl::StrFormat("%.1f", static_cast<double>(bytes) / 1e9);
}

std::string MillisCell(int64_t ns) {
  return absl::StrFormat("%.1f", static_cast<double>(ns) / 1e6);
}

std::string MarkdownRow(const std::vector<std::string>& cells) {
  return absl::StrCat("| ", absl::StrJoin(cells, " | "), " |\n");
}

}  // namespace slackswap
