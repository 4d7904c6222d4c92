#include "base/file.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace slackswap {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/slackswap_file_" + name;
}

TEST(ReadFileBytesTest, ReadsEveryByteEvenOfFilesThatReportNoSize) {
  const std::string path = TempPath("bytes.bin");
  const std::string bytes("a\0b\r\n\xff", 6);
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(ReadFileBytes(path).value_or(""), bytes);
  std::remove(path.c_str());
  // /proc files have size 0 in stat and content when read.
  EXPECT_NE(ReadFileBytes("/proc/self/stat").value_or("").find(')'),
            std::string::npos);
  const absl::StatusOr<std::string> missing =
      ReadFileBytes(TempPath("does-not-exist"));
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("does-not-exist"),
            std::string::npos);
}

}  // namespace
}  // namespace slackswap
