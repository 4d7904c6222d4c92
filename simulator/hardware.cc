#include "simulator/hardware.h"

#include <algorithm>
#include <limits>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace slackswap {
namespace {

constexpr int64_t kGB = 1'000'000'000;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kTera = 1'000'000'000'000;

// Sustained rates, not peaks; docs/workloads.md gives each source and the
// derating from peak.
std::vector<Hardware> MakePresets() {
  return {
      {"titan-x", 12 * kGB, 12 * kGB, 10'000, 12 * kGiB, 0,
       4'600'000'000'000 /* FP32, 75% of 6.1 TFLOP/s */, 280 * kGB},
      {"v100", 12 * kGB, 12 * kGB, 10'000, 32 * kGiB, 0, 90 * kTera, 790 * kGB},
      {"a100", 25 * kGB, 25 * kGB, 10'000, 80 * kGiB, 0, 220 * kTera,
       1'800 * kGB},
      {"h100", 52'800'000'000, 35'200'000'000, 10'000, 80 * kGiB, 0,
       700 * kTera, 2'900 * kGB},
      {"gh200", 300 * kGB, 345 * kGB, 5'000, 96 * kGiB, 0, 700 * kTera,
       3'500 * kGB},
  };
}

const std::vector<Hardware>& Presets() {
  static const std::vector<Hardware>* presets =
      new std::vector<Hardware>(MakePresets());
  return *presets;
}

}  // namespace

const std::vector<std::string>& HardwarePresetNames() {
  static const std::vector<std::string>* names = [] {
    auto* out = new std::vector<std::string>();
    for (const Hardware& h : Presets()) out->push_back(h.name);
    return out;
  }();
  return *names;
}

absl::StatusOr<Hardware> HardwarePreset(absl::string_view name) {
  for (const Hardware& h : Presets()) {
    if (h.name == name) return h;
  }
  return absl::NotFoundError(
      absl::StrCat("unknown hardware preset; valid: ",
                   absl::StrJoin(HardwarePresetNames(), ", ")));
}

Hardware LockstepShare(const Hardware& hardware) {
  Hardware share = hardware;
  const int64_t ranks = std::max(hardware.gpus_per_uplink, 1);
  if (hardware.uplink_d2h_bytes_per_second > 0) {
    share.d2h_bytes_per_second = std::min(
        hardware.d2h_bytes_per_second,
        std::max<int64_t>(hardware.uplink_d2h_bytes_per_second / ranks, 1));
  }
  if (hardware.uplink_h2d_bytes_per_second > 0) {
    share.h2d_bytes_per_second = std::min(
        hardware.h2d_bytes_per_second,
        std::max<int64_t>(hardware.uplink_h2d_bytes_per_second / ranks, 1));
  }
  return share;
}

int64_t TransferNs(int64_t size_bytes, int64_t bytes_per_second,
                   int64_t latency_ns) {
  // In 64 bits where the numerator fits (tensors under about 9 GB): the
  // same quotient without a 128-bit division, a library call.
  constexpr int64_t kNsPerSecond = 1'000'000'000;
  if (size_bytes >= 0 &&
      size_bytes <= (std::numeric_limits<int64_t>::max() - bytes_per_second) /
                        kNsPerSecond) {
    return latency_ns + (size_bytes * kNsPerSecond + bytes_per_second - 1) /
                            bytes_per_second;
  }
  const absl::int128 numerator =
      static_cast<absl::int128>(size_bytes) * 1'000'000'000;
  const absl::int128 ns = (numerator + bytes_per_second - 1) / bytes_per_second;
  return latency_ns + static_cast<int64_t>(ns);
}

}  // namespace slackswap
