#include "service/message_io.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "service/trace_convert.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/slackswap_io_" + name;
}

v1::Trace SmallTrace() {
  WorkloadSpec spec = *WorkloadPreset("gpt2-xl");
  spec.layers = 2;
  return TraceSpecToProto(*GenerateTrace(spec, *HardwarePreset("a100")));
}

TEST(TraceIoTest, BinaryAndJsonRoundTripExactly) {
  const v1::Trace trace = SmallTrace();
  for (const std::string name : {"trace.pb", "trace.json"}) {
    const std::string path = TempPath(name);
    ASSERT_TRUE(WriteMessageFile(path, trace, FormatForPath(path)).ok());
    v1::Trace back;
    ASSERT_TRUE(ReadMessageFile(path, &back).ok()) << name;
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(trace, back))
        << name;
    std::remove(path.c_str());
  }
}

TEST(TraceIoTest, JsonUsesProtoFieldNames) {
  const std::string json = ToJson(SmallTrace());
  EXPECT_NE(json.find("\"size_bytes\""), std::string::npos);
  EXPECT_NE(json.find("\"PHASE_BACKWARD\""), std::string::npos);
}

TEST(TraceIoTest, ReportsMissingAndMalformedFiles) {
  v1::Trace trace;
  EXPECT_EQ(ReadMessageFile(TempPath("does-not-exist"), &trace).code(),
            absl::StatusCode::kNotFound);
  const std::string path = TempPath("garbage.json");
  std::ofstream(path) << "{ \"operators\": [ { \"duration_ns\": \"ten\" } ] }";
  const absl::Status json = ReadMessageFile(path, &trace);
  EXPECT_EQ(json.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(json.message().find(path), std::string::npos);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << std::string("\x0a\xff\xff\xff", 4);
  EXPECT_EQ(ReadMessageFile(path, &trace).code(),
            absl::StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace slackswap
