// File: hardware.h
//
// The machine a plan is for, and the built-in hardware presets. The sources of
// every preset number are in docs/workloads.md.
#ifndef SLACKSWAP_SIMULATOR_HARDWARE_H_
#define SLACKSWAP_SIMULATOR_HARDWARE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace slackswap {

struct Hardware {
  std::string name;
  int64_t d2h_bytes_per_second = 0;
  int64_t h2d_bytes_per_second = 0;
  int64_t transfer_latency_ns = 0;
  int64_t gpu_memory_bytes = 0;
  int64_t host_pinned_memory_bytes = 0;  // 0: no cap
  int64_t matmul_flops_per_second = 0;   // sustained; generator, contention
  int64_t hbm_bytes_per_second = 0;      // sustained; generator, contention
  // GPUs behind one host uplink, and the uplink's rate per direction (0: no
  // cap beyond each GPU's link): docs/event-model.md, "Shared uplink".
  int32_t gpus_per_uplink = 1;
  int64_t uplink_d2h_bytes_per_second = 0;
  int64_t uplink_h2d_bytes_per_second = 0;

  // Whether transfers can be slower than this GPU's own link.
  bool SharesUplink() const {
    return gpus_per_uplink > 1 || uplink_d2h_bytes_per_second > 0 ||
           uplink_h2d_bytes_per_second > 0;
  }
};

// The hardware as each of its gpus_per_uplink ranks sees it when all move
// bytes at once in lockstep: each link at min(its rate, uplink / ranks).
// Without a shared uplink, `hardware` itself.
Hardware LockstepShare(const Hardware& hardware);

// Names accepted by HardwarePreset, in release order:
// "titan-x", "v100", "a100", "h100", "gh200".
const std::vector<std::string>& HardwarePresetNames();

// The preset called `name` (case-sensitive); NOT_FOUND listing the valid names
// otherwise.
absl::StatusOr<Hardware> HardwarePreset(absl::string_view name);

// Time one transfer of `size_bytes` takes at `bytes_per_second`: latency +
// ceil(size * 1e9 / bandwidth) nanoseconds. Exact integer arithmetic; the
// caller guarantees the result fits in int64 (see CheckTimeRange in
// event_model.h).
int64_t TransferNs(int64_t size_bytes, int64_t bytes_per_second,
                   int64_t latency_ns);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_HARDWARE_H_
