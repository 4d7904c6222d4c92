#include "planner/traffic_run.h"

#include <algorithm>

#include "absl/status/statusor.h"
#include "simulator/event_model.h"
#include "simulator/plan.h"

namespace slackswap {

TrafficRun RunTrafficAlone(const Trace& trace, const Hardware& hardware) {
  TrafficRun run;
  run.op_start.assign(trace.ops.size(), 0);
  int64_t at = 0;
  for (size_t o = 0; o < trace.ops.size(); ++o) {
    run.op_start[o] = at;
    at += trace.ops[o].duration_ns;
  }
  run.iteration_ns = at;
  if (trace.fixed_transfers.empty()) return run;
  int64_t tail[2] = {0, 0};
  for (const FixedTransfer& x : trace.fixed_transfers) {
    if (x.after_op != trace.num_ops() - 1) continue;
    const bool d2h = x.direction == Direction::kD2H;
    tail[d2h] += TransferNs(
        x.size_bytes,
        d2h ? hardware.d2h_bytes_per_second : hardware.h2d_bytes_per_second,
        hardware.transfer_latency_ns);
  }
  run.tail_ns = std::max(tail[0], tail[1]);
  SimulationOptions options;
  options.record_timeline = true;
  const absl::StatusOr<SimulationResult> r =
      Simulate(trace, hardware, Plan::AllKeep(trace), options);
  // Unlimited memory: the all-keep plan completes (the profiled starts
  // stand otherwise; they are a bound too).
  if (!r.ok() || !r->feasible) return run;
  run.iteration_ns = r->iteration_ns;
  for (const TimelineEvent& e : r->timeline) {
    if (e.kind == TimelineKind::kOp) run.op_start[e.index] = e.start_ns;
  }
  return run;
}

}  // namespace slackswap
