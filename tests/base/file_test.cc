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

TEST(WriteFileBytesTest, ReplacesTheFileWithEveryByte) {
  const std::string path = TempPath("written.bin");
  const std::string bytes("x\0y\r\n\xfe", 6);
  ASSERT_TRUE(WriteFileBytes(path, "a much longer first version").ok());
  ASSERT_TRUE(WriteFileBytes(path, bytes).ok());
  EXPECT_EQ(ReadFileBytes(path).value_or(""), bytes);
  std::remove(path.c_str());
  const absl::Status missing_dir =
      WriteFileBytes(TempPath("no-such-dir/file"), bytes);
  EXPECT_EQ(missing_dir.code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(missing_dir.message().find("no-such-dir/file"), std::string::npos);
  // A full device: the bytes do not all land.
  EXPECT_EQ(WriteFileBytes("/dev/full", bytes).code(),
            absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace slackswap
