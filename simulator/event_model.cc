#include "simulator/event_model.h"

#include <algorithm>
#include <string>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/node_model.h"
#include "simulator/replay.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

constexpr int64_t kMaxSimulatedNs = int64_t{1} << 62;

}  // namespace

namespace {

// Every copy the replay can make: two of every tensor and every fixed
// transfer once (bytes, and copies for their latencies).
absl::int128 CopyBytes(const Trace& trace) {
  absl::int128 bytes = absl::int128(trace.total_tensor_bytes) * 2;
  for (const FixedTransfer& x : trace.fixed_transfers) bytes += x.size_bytes;
  return bytes;
}
absl::int128 Copies(const Trace& trace) {
  return absl::int128(trace.tensors.size()) * 2 + trace.fixed_transfers.size();
}

}  // namespace

absl::Status CheckTimeRange(const Trace& trace, const Hardware& hardware) {
  absl::int128 total = trace.ideal_ns;
  for (const Tensor& t : trace.tensors) total += t.recompute_ns;
  const int64_t slowest =
      std::min(hardware.d2h_bytes_per_second, hardware.h2d_bytes_per_second);
  total += CopyBytes(trace) * 1'000'000'000 / slowest;
  total +=
      static_cast<absl::int128>(hardware.transfer_latency_ns) * Copies(trace);
  if (total < kMaxSimulatedNs) return absl::OkStatus();
  const char* field =
      hardware.d2h_bytes_per_second <= hardware.h2d_bytes_per_second
          ? "hardware.d2h_bytes_per_second"
          : "hardware.h2d_bytes_per_second";
  return InvalidField(
      field, "too small for this trace: the iteration could exceed 2^62 ns");
}

absl::Status CheckPhysics(const Trace& trace, const Hardware& hardware,
                          const Physics& physics, int64_t steps) {
  if (physics.rank_skew_ns < 0 || physics.rank_skew_ns > (int64_t{1} << 40)) {
    return InvalidField("physics.rank_skew_ns", "must be in [0, 2^40] ns");
  }
  if (physics.hbm_contention) {
    if (hardware.matmul_flops_per_second <= 0) {
      return InvalidField("hardware.matmul_flops_per_second",
                          "must be > 0 for HBM contention");
    }
    const absl::int128 links = absl::int128(hardware.d2h_bytes_per_second) +
                               hardware.h2d_bytes_per_second;
    if (hardware.hbm_bytes_per_second <= 0 ||
        absl::int128(hardware.hbm_bytes_per_second) < 2 * links) {
      return InvalidField("hardware.hbm_bytes_per_second",
                          "must be at least twice d2h + h2d bytes per second "
                          "for HBM contention");
    }
  }
  if (!UsesNodePhysics(hardware, physics) && steps <= 1)
    return absl::OkStatus();
  // The slowest case: every op at half speed (plus a ns of rounding), every
  // transfer at a 64th of the narrower uplink, every rank skewed.
  const int64_t repeats = std::max<int64_t>(steps, 1);
  absl::int128 compute = absl::int128(trace.ideal_ns) * 2 + trace.num_ops();
  for (const Tensor& t : trace.tensors) compute += t.recompute_ns;
  const absl::int128 skew = absl::int128(physics.rank_skew_ns) * 64;
  int64_t slowest =
      std::min(hardware.d2h_bytes_per_second, hardware.h2d_bytes_per_second);
  bool uplink_slowest = false;
  for (int64_t uplink : {hardware.uplink_d2h_bytes_per_second,
                         hardware.uplink_h2d_bytes_per_second}) {
    if (uplink > 0 && std::max<int64_t>(uplink / 64, 1) < slowest) {
      slowest = std::max<int64_t>(uplink / 64, 1);
      uplink_slowest = true;
    }
  }
  const absl::int128 transfers =
      CopyBytes(trace) * 1'000'000'000 / slowest +
      absl::int128(hardware.transfer_latency_ns + 1) * Copies(trace);
  if ((compute + skew + transfers) * repeats < kMaxSimulatedNs)
    return absl::OkStatus();
  // Name what takes most of the time: the trace's own operators (and
  // rebuilds), the skew, or the links.
  const std::string over =
      repeats > 1 ? absl::StrCat(" over ", repeats, " steps") : "";
  if (compute >= skew && compute >= transfers) {
    return InvalidField(
        "trace.operators",
        absl::StrCat("the operators' and rebuilds' durations are too long for "
                     "node physics",
                     over, ": at half speed the replay could exceed 2^62 ns"));
  }
  if (skew >= transfers) {
    return InvalidField("physics.rank_skew_ns",
                        absl::StrCat("too large for this trace", over,
                                     ": the replay could exceed 2^62 ns"));
  }
  const char* field =
      uplink_slowest
          ? (hardware.uplink_d2h_bytes_per_second > 0 &&
                     (hardware.uplink_h2d_bytes_per_second <= 0 ||
                      hardware.uplink_d2h_bytes_per_second <=
                          hardware.uplink_h2d_bytes_per_second)
                 ? "hardware.uplink_d2h_bytes_per_second"
                 : "hardware.uplink_h2d_bytes_per_second")
          : (hardware.d2h_bytes_per_second <= hardware.h2d_bytes_per_second
                 ? "hardware.d2h_bytes_per_second"
                 : "hardware.h2d_bytes_per_second");
  return InvalidField(
      field, absl::StrCat("too small for this trace with node physics", over,
                          ": the replay could exceed 2^62 ns"));
}

absl::StatusOr<SimulationResult> Simulate(const Trace& trace,
                                          const Hardware& hardware,
                                          const Plan& plan,
                                          const SimulationOptions& options) {
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(trace, hardware));
  SLACKSWAP_RETURN_IF_ERROR(CheckPhysics(trace, hardware, options.physics));
  SLACKSWAP_RETURN_IF_ERROR(
      ValidatePlan(trace, hardware, plan, options.per_layer_barriers));
  const Schedule schedule = DeriveSchedule(trace, plan);
  return SimulateSchedule(trace, hardware, plan, schedule, options);
}

SimulationResult SimulateSchedule(const Trace& trace, const Hardware& hardware,
                                  const Plan& plan, const Schedule& schedule,
                                  const SimulationOptions& options) {
  if (UsesNodePhysics(hardware, options.physics)) {
    return internal::SimulateRanks(trace, hardware, plan, schedule, options);
  }
  return internal::Replay(trace, hardware, plan, schedule, options,
                          internal::Rates::kFixed)
      .Run();
}

TransferTimes ComputeTransferTimes(const Trace& trace, const Hardware& hardware,
                                   const Physics& physics) {
  // The rates internal::Replay takes: the lockstep share under node physics.
  const Hardware link =
      UsesNodePhysics(hardware, physics) ? LockstepShare(hardware) : hardware;
  TransferTimes times;
  times.d2h_bytes_per_second = link.d2h_bytes_per_second;
  times.h2d_bytes_per_second = link.h2d_bytes_per_second;
  times.latency_ns = hardware.transfer_latency_ns;
  const int32_t items = trace.num_tensors() + trace.num_fixed_transfers();
  times.d2h_ns.resize(items);
  times.h2d_ns.resize(items);
  for (int32_t item = 0; item < items; ++item) {
    const int64_t bytes = ItemBytes(trace, item);
    times.d2h_ns[item] =
        TransferNs(bytes, times.d2h_bytes_per_second, times.latency_ns);
    times.h2d_ns[item] =
        TransferNs(bytes, times.h2d_bytes_per_second, times.latency_ns);
  }
  return times;
}

int64_t MaxReplayEvents(const Trace& trace, const Hardware& hardware,
                        const Physics& physics) {
  const int64_t ranks =
      UsesNodePhysics(hardware, physics) && physics.rank_skew_ns != 0
          ? std::max(hardware.gpus_per_uplink, 1)
          : 1;
  const int64_t tensors = trace.num_tensors();
  const int64_t fixed = trace.num_fixed_transfers();
  return ranks * (1 + trace.num_ops() + 4 * tensors + 2 * fixed);
}

int64_t AllKeepPeakBytes(const Trace& trace) {
  // All keep: the highest, over the ops, of the tensors resident at an op's
  // start (its outputs included) and what it holds beside them (workspace,
  // the fixed transfers' bytes that every speed holds there). With fixed
  // transfers that is the smallest budget at which all-keep completes
  // (docs/event-model.md, condition S); without, the unlimited run's peak.
  int64_t resident = 0;
  int64_t peak = 0;
  std::vector<std::vector<int32_t>> release(trace.ops.size());
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    release[trace.tensors[t].last_backward_use].push_back(t);
  }
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    for (int32_t t : trace.produces.Row(o))
      resident += trace.tensors[t].size_bytes;
    peak = std::max(peak, resident + trace.transient_bytes(o));
    for (int32_t t : release[o]) resident -= trace.tensors[t].size_bytes;
  }
  return peak;
}

}  // namespace slackswap
