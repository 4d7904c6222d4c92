// The process_* metrics' parsing of /proc/self/stat, and a live reading.
#include "server/process_metrics.h"

#include <unistd.h>

#include <string>

#include "base/file.h"
#include "gtest/gtest.h"

namespace slackswap {
namespace {

TEST(ProcessMetricsTest, ParsesStatCountingFieldsFromTheLastParenthesis) {
  // A command name with spaces and a parenthesis; utime 250, stime 50 (field
  // 14 and 15), starttime 1000 (22), vsize 4096000 (23), rss 300 pages (24).
  const std::string stat =
      "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 "
      "20 0 9 0 1000 4096000 300 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 "
      "0 17 1 0 0 0 0 0";
  const std::optional<ProcessSample> s =
      ParseProcStat(stat, /*ticks_per_second=*/100, /*page_bytes=*/4096,
                    /*boot_time_seconds=*/1.7e9);
  ASSERT_TRUE(s.has_value());
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 3.0);
  EXPECT_DOUBLE_EQ(s->virtual_bytes, 4096000);
  EXPECT_DOUBLE_EQ(s->resident_bytes, 300 * 4096.0);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1.7e9 + 10);

  EXPECT_FALSE(ParseProcStat("no parenthesis", 100, 4096, 0).has_value());
  EXPECT_FALSE(ParseProcStat("1 (short) S 1 2 3", 100, 4096, 0).has_value());
}

TEST(ProcessMetricsTest, ReadsThisProcess) {
  const absl::StatusOr<std::string> stat = ReadFileBytes("/proc/self/stat");
  ASSERT_TRUE(stat.ok());
  const std::optional<ProcessSample> s =
      ParseProcStat(*stat, static_cast<double>(sysconf(_SC_CLK_TCK)),
                    static_cast<double>(sysconf(_SC_PAGESIZE)), 0);
  ASSERT_TRUE(s.has_value());
  EXPECT_GT(s->resident_bytes, 1 << 20);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
}

}  // namespace
}  // namespace slackswap
