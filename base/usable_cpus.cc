#include "base/usable_cpus.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/file.h"

namespace slackswap {
namespace {

std::optional<int64_t> ReadInt(const std::string& path) {
  const absl::StatusOr<std::string> text = ReadFileBytes(path);
  int64_t value = 0;
  if (!text.ok() ||
      !absl::SimpleAtoi(absl::StripAsciiWhitespace(*text), &value)) {
    return std::nullopt;
  }
  return value;
}

// `path` and each folder above it, up to and including `mount`.
std::vector<std::string> FoldersUpTo(const std::string& mount,
                                     absl::string_view path) {
  std::vector<std::string> folders;
  std::string relative(absl::StripSuffix(path, "/"));
  for (;;) {
    folders.push_back(mount + relative);
    const size_t slash = relative.rfind('/');
    if (relative.empty() || slash == std::string::npos) break;
    relative.resize(slash);
  }
  return folders;
}

// The v1 quota over period in `folder`; nullopt for none (-1) or no files.
std::optional<double> CfsQuotaLimit(const std::string& folder) {
  const std::optional<int64_t> quota = ReadInt(folder + "/cpu.cfs_quota_us");
  const std::optional<int64_t> period = ReadInt(folder + "/cpu.cfs_period_us");
  if (!quota.has_value() || !period.has_value() || *quota <= 0 ||
      *period <= 0) {
    return std::nullopt;
  }
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

void TakeSmaller(std::optional<double>& limit, std::optional<double> other) {
  if (other.has_value() && (!limit.has_value() || *other < *limit))
    limit = other;
}

}  // namespace

std::optional<double> CpuMaxLimit(absl::string_view cpu_max) {
  const std::vector<absl::string_view> fields = absl::StrSplit(
      absl::StripAsciiWhitespace(cpu_max), ' ', absl::SkipEmpty());
  int64_t quota = 0;
  int64_t period = 0;
  if (fields.size() != 2 || !absl::SimpleAtoi(fields[0], &quota) ||
      !absl::SimpleAtoi(fields[1], &period) || quota <= 0 || period <= 0) {
    return std::nullopt;  // "max ...", or not a limit at all
  }
  return static_cast<double>(quota) / static_cast<double>(period);
}

int UsableCpus(int affinity_cpus, absl::string_view proc_self_cgroup,
               const std::string& cgroup_root) {
  const bool v2 = ReadFileBytes(cgroup_root + "/cgroup.controllers").ok();
  std::optional<double> limit;
  for (absl::string_view line : absl::StrSplit(proc_self_cgroup, '\n')) {
    // hierarchy-id:controllers:path
    const std::vector<absl::string_view> fields =
        absl::StrSplit(line, absl::MaxSplits(':', 2));
    if (fields.size() != 3 || fields[2].empty() || fields[2][0] != '/')
      continue;
    if (v2 && fields[0] == "0" && fields[1].empty()) {
      for (const std::string& folder : FoldersUpTo(cgroup_root, fields[2])) {
        const absl::StatusOr<std::string> text =
            ReadFileBytes(folder + "/cpu.max");
        if (text.ok()) TakeSmaller(limit, CpuMaxLimit(*text));
      }
    }
    const std::vector<absl::string_view> controllers =
        absl::StrSplit(fields[1], ',');
    if (!v2 && std::find(controllers.begin(), controllers.end(), "cpu") !=
                   controllers.end()) {
      const std::string mount = cgroup_root + "/" + std::string(fields[1]);
      for (const std::string& folder : FoldersUpTo(mount, fields[2])) {
        TakeSmaller(limit, CfsQuotaLimit(folder));
      }
    }
  }
  int cpus = std::max(1, affinity_cpus);
  if (limit.has_value()) {
    // A limit of 1.5 CPUs keeps two threads busy for three quarters of the
    // time: round up. (A tiny tolerance keeps 2.0000001 from becoming 3.)
    cpus =
        std::min(cpus, std::max(1, static_cast<int>(std::ceil(*limit - 1e-6))));
  }
  return cpus;
}

int UsableCpus() {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int affinity_cpus =
      sched_getaffinity(0, sizeof(allowed), &allowed) == 0
          ? CPU_COUNT(&allowed)
          : static_cast<int>(std::thread::hardware_concurrency());
  return UsableCpus(affinity_cpus,
                    ReadFileBytes("/proc/self/cgroup").value_or(std::string()),
                    "/sys/fs/cgroup");
}

}  // namespace slackswap
