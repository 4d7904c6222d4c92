#include "server/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"

namespace slackswap {
namespace {

// "btime N" of /proc/stat: the boot time, seconds since the epoch.
double BootTimeSeconds() {
  const absl::StatusOr<std::string> stat = ReadFileBytes("/proc/stat");
  if (!stat.ok()) return 0;
  for (absl::string_view line : absl::StrSplit(*stat, '\n')) {
    double seconds = 0;
    if (absl::ConsumePrefix(&line, "btime ") &&
        absl::SimpleAtod(line, &seconds)) {
      return seconds;
    }
  }
  return 0;
}

}  // namespace

std::optional<ProcessSample> ParseProcStat(const std::string& stat,
                                           double ticks_per_second,
                                           double page_bytes,
                                           double boot_time_seconds) {
  // "pid (comm) state ppid ...": the command may hold spaces and
  // parentheses, so the fields are counted from the last ')'.
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::string_view(stat).substr(close + 1), ' ', absl::SkipEmpty());
  // fields[0] is field 3 (state): field k is fields[k - 3].
  auto field = [&](int k, double& out) {
    return static_cast<int>(fields.size()) > k - 3 &&
           absl::SimpleAtod(fields[k - 3], &out);
  };
  double utime = 0, stime = 0, start_ticks = 0, vsize = 0, rss_pages = 0;
  if (!field(14, utime) || !field(15, stime) || !field(22, start_ticks) ||
      !field(23, vsize) || !field(24, rss_pages)) {
    return std::nullopt;
  }
  ProcessSample s;
  s.cpu_seconds = (utime + stime) / ticks_per_second;
  s.virtual_bytes = vsize;
  s.resident_bytes = rss_pages * page_bytes;
  s.start_time_seconds = boot_time_seconds + start_ticks / ticks_per_second;
  return s;
}

ProcessMetrics::ProcessMetrics(prometheus::Registry& registry)
    : boot_time_seconds_(BootTimeSeconds()) {
  auto gauge = [&](const char* name, const char* help) {
    return &prometheus::BuildGauge()
                .Name(name)
                .Help(help)
                .Register(registry)
                .Add({});
  };
  cpu_ = &prometheus::BuildCounter()
              .Name("process_cpu_seconds_total")
              .Help("Total user and system CPU time spent in seconds.")
              .Register(registry)
              .Add({});
  resident_ =
      gauge("process_resident_memory_bytes", "Resident memory size in bytes.");
  virtual_ =
      gauge("process_virtual_memory_bytes", "Virtual memory size in bytes.");
  open_fds_ = gauge("process_open_fds", "Number of open file descriptors.");
  max_fds_ =
      gauge("process_max_fds", "Maximum number of open file descriptors.");
  start_time_ = gauge("process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.");
  Update();
}

void ProcessMetrics::Update() {
  const absl::StatusOr<std::string> stat = ReadFileBytes("/proc/self/stat");
  if (stat.ok()) {
    const std::optional<ProcessSample> s = ParseProcStat(
        *stat, static_cast<double>(sysconf(_SC_CLK_TCK)),
        static_cast<double>(sysconf(_SC_PAGESIZE)), boot_time_seconds_);
    if (s.has_value()) {
      if (s->cpu_seconds > cpu_seen_) {
        cpu_->Increment(s->cpu_seconds - cpu_seen_);
        cpu_seen_ = s->cpu_seconds;
      }
      resident_->Set(s->resident_bytes);
      virtual_->Set(s->virtual_bytes);
      start_time_->Set(s->start_time_seconds);
    }
  }
  std::error_code error;
  double fds = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", error), end;
       !error && it != end; it.increment(error)) {
    ++fds;
  }
  // Less the descriptor the listing itself held open.
  if (!error) open_fds_->Set(fds - 1);
  struct rlimit limit {};
  if (getrlimit(RLIMIT_NOFILE, &limit) == 0)
    max_fds_->Set(static_cast<double>(limit.rlim_cur));
}

}  // namespace slackswap
