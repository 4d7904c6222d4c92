#include "base/file.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"

namespace slackswap {

absl::StatusOr<std::string> ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

}  // namespace slackswap
