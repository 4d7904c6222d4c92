// The CLI's --budget syntax (client/cli_inputs.h).
#include "client/cli_inputs.h"

#include <cmath>
#include <string>

#include "absl/flags/flag.h"
#include "client/cli_flags.h"
#include "client/text_format.h"
#include "gtest/gtest.h"
#include "service/service_core.h"
#include "service/wire_convert.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

TEST(ParseBudgetTest, FractionsPercentagesBytesAndUnlimited) {
  EXPECT_DOUBLE_EQ(ParseBudget("0.5")->fraction_of_peak(), 0.5);
  EXPECT_DOUBLE_EQ(ParseBudget("1.0")->fraction_of_peak(), 1.0);
  EXPECT_DOUBLE_EQ(ParseBudget("5e-1")->fraction_of_peak(), 0.5);
  EXPECT_DOUBLE_EQ(ParseBudget("50%")->fraction_of_peak(), 0.5);
  EXPECT_DOUBLE_EQ(ParseBudget("12.5%")->fraction_of_peak(), 0.125);
  EXPECT_EQ(ParseBudget("123")->bytes(), 123);
  EXPECT_EQ(ParseBudget("20GB")->bytes(), 20'000'000'000);
  EXPECT_EQ(ParseBudget("20GiB")->bytes(), int64_t{20} << 30);
  EXPECT_EQ(ParseBudget("1.5MiB")->bytes(), 1572864);
  EXPECT_EQ(ParseBudget("3MB")->bytes(), 3'000'000);
  EXPECT_TRUE(ParseBudget("unlimited")->unlimited());
  // A whole number without a unit is bytes, not a fraction.
  EXPECT_EQ(ParseBudget("1")->bytes(), 1);
  EXPECT_EQ(ParseBudget("1")->limit_case(), v1::Budget::kBytes);
}

TEST(ParseBudgetTest, AnythingElseNamesTheFlag) {
  for (const char* bad :
       {"", "half", "50%%", "GB", "20TB", "0.5x", "unlimitedd"}) {
    const absl::StatusOr<v1::Budget> budget = ParseBudget(bad);
    ASSERT_FALSE(budget.ok()) << bad;
    EXPECT_EQ(budget.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(budget.status().message().rfind("--budget must be", 0), 0u)
        << budget.status();
  }
}

TEST(HardwareFromFlagsTest, AnUplinkThatIsNotARateNamesTheFlag) {
  for (double bad : {9.3e9, -1.0, std::nan(""), HUGE_VAL, -HUGE_VAL}) {
    absl::SetFlag(&FLAGS_uplink_gbps, bad);
    int exit_code = 0;
    const absl::StatusOr<v1::Hardware> hardware = HardwareFromFlags(exit_code);
    ASSERT_FALSE(hardware.ok()) << bad;
    EXPECT_EQ(hardware.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(hardware.status().message().rfind("--uplink_gbps: ", 0), 0u)
        << hardware.status();
    EXPECT_NE(exit_code, 0);
  }
  // The largest rate that fits in int64 bytes per second is taken.
  absl::SetFlag(&FLAGS_uplink_gbps, 9.2e9);
  int exit_code = 0;
  const absl::StatusOr<v1::Hardware> hardware = HardwareFromFlags(exit_code);
  ASSERT_TRUE(hardware.ok()) << hardware.status();
  EXPECT_EQ(hardware->uplink_d2h_bytes_per_second(), 9'200'000'000'000'000'000);
  absl::SetFlag(&FLAGS_uplink_gbps, 0);
}

TEST(TextFormatTest, SmallByteCountsKeepTheirDigits) {
  EXPECT_EQ(Gigabytes(1'970'000'000), "1.97 GB");
  EXPECT_EQ(Gigabytes(10'000'000), "0.01 GB");
  EXPECT_EQ(Gigabytes(9'999'999), "10.00 MB");
  EXPECT_EQ(Gigabytes(16'384), "0.02 MB");
  EXPECT_EQ(Gigabytes(9'999), "9999 B");
  EXPECT_EQ(Gigabytes(0), "0 B");
  EXPECT_EQ(Gigabytes(kUnlimitedBytes), "unlimited");
}

TEST(PrecisionTest, NamesAndWireValuesMapBothWays) {
  for (Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp32}) {
    EXPECT_EQ(PrecisionFromName(PrecisionName(p)), p);
    EXPECT_EQ(PrecisionFromProto(PrecisionToProto(p)), p);
    EXPECT_NE(PrecisionToProto(p), v1::PRECISION_UNSPECIFIED);
  }
  EXPECT_EQ(PrecisionToProto(Precision::kFp16), v1::PRECISION_FP16);
  EXPECT_EQ(PrecisionFromName("bf16"), Precision::kBf16);
  EXPECT_FALSE(PrecisionFromName("int8").has_value());
  EXPECT_FALSE(PrecisionFromProto(v1::PRECISION_UNSPECIFIED).has_value());
  EXPECT_FALSE(PrecisionFromProto(99).has_value());
}

TEST(OffloadTest, NamesAndWireValuesMapBothWays) {
  for (Offload o :
       {Offload::kNone, Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    EXPECT_EQ(OffloadFromName(OffloadName(o)), o);
    EXPECT_EQ(OffloadFromProto(OffloadToProto(o)), o);
    EXPECT_NE(OffloadToProto(o), v1::OFFLOAD_UNSPECIFIED);
  }
  EXPECT_EQ(OffloadToProto(Offload::kZeroDpu), v1::OFFLOAD_ZERO_DPU);
  EXPECT_EQ(OffloadToProto(Offload::kFsdpCpu), v1::OFFLOAD_FSDP_CPU);
  EXPECT_EQ(OffloadFromProto(v1::OFFLOAD_UNSPECIFIED), Offload::kNone);
  EXPECT_FALSE(OffloadFromProto(99).has_value());
}

// The flag goes into the generator's request; an unknown mode names it.
TEST(OffloadTest, FlagSetsTheRequestOrNamesItself) {
  absl::SetFlag(&FLAGS_offload, std::string("fsdp-cpu"));
  absl::StatusOr<v1::GenerateTraceRequest> request = GenerateRequestFromFlags();
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->offload(), v1::OFFLOAD_FSDP_CPU);
  absl::SetFlag(&FLAGS_offload, std::string("none"));
  request = GenerateRequestFromFlags();
  ASSERT_TRUE(request.ok()) << request.status();
  EXPECT_EQ(request->offload(), v1::OFFLOAD_UNSPECIFIED);
  absl::SetFlag(&FLAGS_offload, std::string("zero-3"));
  request = GenerateRequestFromFlags();
  EXPECT_EQ(request.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(request.status().message().find("--offload"), std::string::npos);
  absl::SetFlag(&FLAGS_offload, std::string("none"));
}

}  // namespace
}  // namespace slackswap
