// File: speed_scaling.h
//
// Replaying a plan at speeds other than the profiled ones. A real step never
// runs at exactly the profiled speeds: kernels vary, the link is shared with
// other traffic. Under the event model's prefetch admission
// (PrefetchAdmission::kAnySpeed) a plan that completes at one speed completes
// within its budget at every other (docs/event-model.md, "Prefetch
// admission"); only its time changes. This file scales a trace's durations
// and a machine's links for such replays, and replays a plan at the fixed set
// of scalings that every plan's report carries.
//
// Example:
//   std::vector<ScaledReplay> replays =
//       ReplayAtScalings(trace, hardware, plan, schedule, options);
#ifndef SLACKSWAP_SIMULATOR_SPEED_SCALING_H_
#define SLACKSWAP_SIMULATOR_SPEED_SCALING_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/plan.h"
#include "simulator/schedule.h"
#include "simulator/trace.h"

namespace slackswap {

// The scalings every plan's robustness is reported at: the link at half and
// twice its speed, kernels 20% faster and 20% slower.
const std::vector<SpeedScaling>& RobustnessScalings();

// `trace` with operator o's duration times op_factors[o] and tensor t's
// recompute time times rebuild_factors[t] (each >= 0, one per op and tensor),
// rounded to the nearest ns; ideal_ns follows. OUT_OF_RANGE when a duration
// or their sum would pass the validated limit (2^60 ns).
absl::StatusOr<Trace> ScaleDurations(const Trace& trace,
                                     absl::Span<const double> op_factors,
                                     absl::Span<const double> rebuild_factors);
// Every duration times `factor`.
absl::StatusOr<Trace> ScaleDurations(const Trace& trace, double factor);

// Each direction's link and uplink bandwidth times its factor (> 0), rounded
// down and kept in [1, INT64_MAX] bytes/s; an uplink of 0 (no cap) stays 0.
// An infinite factor gives INT64_MAX: a copy of under 9.2 GB then takes its
// latency plus 1 ns.
Hardware ScaleLinks(const Hardware& hardware, double d2h_factor,
                    double h2d_factor);

// Replays `plan` (valid, with `schedule` = DeriveSchedule) under `options`
// with the trace's durations and the machine's links scaled by `scaling`.
// OUT_OF_RANGE or INVALID_ARGUMENT when the scaled trace or machine leaves
// the ranges the event model accepts (CheckTimeRange, CheckPhysics).
absl::StatusOr<SimulationResult> ReplayScaled(const Trace& trace,
                                              const Hardware& hardware,
                                              const Plan& plan,
                                              const Schedule& schedule,
                                              const SimulationOptions& options,
                                              const SpeedScaling& scaling);

// Replays `plan` (valid, with `schedule` = DeriveSchedule) under `options`
// (its timeline and cutoff ignored) at each of RobustnessScalings(), in that
// order (SimulationResult::scaled holds them in a report). Cost: one replay and
// one trace copy per scaling.
std::vector<ScaledReplay> ReplayAtScalings(const Trace& trace,
                                           const Hardware& hardware,
                                           const Plan& plan,
                                           const Schedule& schedule,
                                           const SimulationOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SPEED_SCALING_H_
