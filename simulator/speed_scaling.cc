#include "simulator/speed_scaling.h"

#include <cmath>
#include <limits>

#include "absl/numeric/int128.h"
#include "absl/status/status.h"
#include "base/status_macros.h"
#include "simulator/trace_limits.h"

namespace slackswap {
namespace {

// round(value * factor) for value in [0, 2^60] and factor >= 0, or -1 when it
// passes kMaxQuantity.
int64_t ScaleQuantity(int64_t value, double factor) {
  const double scaled = std::nearbyint(static_cast<double>(value) * factor);
  if (!(scaled <= static_cast<double>(kMaxQuantity))) return -1;
  return static_cast<int64_t>(scaled);
}

int64_t ScaleRate(int64_t rate, double factor) {
  if (rate <= 0) return rate;
  const double scaled = std::floor(static_cast<double>(rate) * factor);
  // 2^63 as a double is the first value past INT64_MAX.
  if (!(scaled < 9223372036854775808.0)) {
    return std::numeric_limits<int64_t>::max();
  }
  return std::max<int64_t>(static_cast<int64_t>(scaled), 1);
}

}  // namespace

const std::vector<SpeedScaling>& RobustnessScalings() {
  static const std::vector<SpeedScaling>* scalings =
      new std::vector<SpeedScaling>{
          {1.0, 0.5}, {1.0, 2.0}, {0.8, 1.0}, {1.2, 1.0}};
  return *scalings;
}

absl::StatusOr<Trace> ScaleDurations(const Trace& trace,
                                     absl::Span<const double> op_factors,
                                     absl::Span<const double> rebuild_factors) {
  Trace scaled = trace;
  absl::int128 ideal = 0;
  for (int32_t o = 0; o < trace.num_ops(); ++o) {
    const int64_t d = ScaleQuantity(trace.ops[o].duration_ns, op_factors[o]);
    if (d < 0) return absl::OutOfRangeError("a scaled duration passes 2^60 ns");
    scaled.ops[o].duration_ns = d;
    ideal += d;
  }
  if (ideal > kMaxQuantity) {
    return absl::OutOfRangeError("the scaled durations sum past 2^60 ns");
  }
  scaled.ideal_ns = static_cast<int64_t>(ideal);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const int64_t d =
        ScaleQuantity(trace.tensors[t].recompute_ns, rebuild_factors[t]);
    if (d < 0) return absl::OutOfRangeError("a scaled rebuild passes 2^60 ns");
    scaled.tensors[t].recompute_ns = d;
  }
  return scaled;
}

absl::StatusOr<Trace> ScaleDurations(const Trace& trace, double factor) {
  return ScaleDurations(trace, std::vector<double>(trace.ops.size(), factor),
                        std::vector<double>(trace.tensors.size(), factor));
}

Hardware ScaleLinks(const Hardware& hardware, double d2h_factor,
                    double h2d_factor) {
  Hardware scaled = hardware;
  scaled.d2h_bytes_per_second =
      ScaleRate(hardware.d2h_bytes_per_second, d2h_factor);
  scaled.h2d_bytes_per_second =
      ScaleRate(hardware.h2d_bytes_per_second, h2d_factor);
  scaled.uplink_d2h_bytes_per_second =
      ScaleRate(hardware.uplink_d2h_bytes_per_second, d2h_factor);
  scaled.uplink_h2d_bytes_per_second =
      ScaleRate(hardware.uplink_h2d_bytes_per_second, h2d_factor);
  return scaled;
}

absl::StatusOr<SimulationResult> ReplayScaled(const Trace& trace,
                                              const Hardware& hardware,
                                              const Plan& plan,
                                              const Schedule& schedule,
                                              const SimulationOptions& options,
                                              const SpeedScaling& scaling) {
  absl::StatusOr<Trace> scaled_trace =
      scaling.kernel_time_factor == 1
          ? absl::StatusOr<Trace>(trace)
          : ScaleDurations(trace, scaling.kernel_time_factor);
  if (!scaled_trace.ok()) return scaled_trace.status();
  const Hardware scaled_hardware = ScaleLinks(
      hardware, scaling.link_speed_factor, scaling.link_speed_factor);
  SLACKSWAP_RETURN_IF_ERROR(CheckTimeRange(*scaled_trace, scaled_hardware));
  SLACKSWAP_RETURN_IF_ERROR(
      CheckPhysics(*scaled_trace, scaled_hardware, options.physics));
  return SimulateSchedule(*scaled_trace, scaled_hardware, plan, schedule,
                          options);
}

std::vector<ScaledReplay> ReplayAtScalings(const Trace& trace,
                                           const Hardware& hardware,
                                           const Plan& plan,
                                           const Schedule& schedule,
                                           const SimulationOptions& options) {
  SimulationOptions o = options;
  o.record_timeline = false;
  o.cutoff_ns = SimulationOptions::kNoCutoff;
  o.issue_gated = nullptr;
  std::vector<ScaledReplay> replays;
  for (const SpeedScaling& scaling : RobustnessScalings()) {
    ScaledReplay& r = replays.emplace_back();
    r.scaling = scaling;
    const absl::StatusOr<SimulationResult> replay =
        ReplayScaled(trace, hardware, plan, schedule, o, scaling);
    if (!replay.ok()) continue;
    r.replayed = true;
    r.feasible = replay->feasible;
    r.iteration_ns = replay->iteration_ns;
    r.ideal_ns = replay->ideal_ns;
    r.throughput_ratio = replay->throughput_ratio;
    r.peak_resident_bytes = replay->peak_resident_bytes;
  }
  return replays;
}

}  // namespace slackswap
