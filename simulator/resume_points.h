// File: resume_points.h
//
// Replays that start part-way (docs/event-model.md, "Replays resumed from
// another plan's"). A planner's candidates differ from the plan they are
// compared with in a tensor or two, and their replays are that plan's until
// the first of those tensors matters: a changed tensor's last forward use,
// the D2H stream reaching it, or the first prefetch. A replay that records
// (SimulationOptions::record_resume_points) saves its state at up to
// kResumePoints points of its forward pass, before the H2D stream has done
// anything; a replay of another plan given those points and the plan they
// came from (SimulationOptions::resume_from) starts from the latest point at
// which its own replay is certain to be in that same state, and its result
// is the one it would have replayed from the start, bit for bit (tested),
// with the events it did not run in SimulationResult::resumed_events.
//
// Single-GPU and lockstep replays (Run) without timeline, barriers, fixed
// transfers, an allocator model or the exact search's issue_gated marks;
// elsewhere nothing is recorded and every replay starts at the start.
#ifndef SLACKSWAP_SIMULATOR_RESUME_POINTS_H_
#define SLACKSWAP_SIMULATOR_RESUME_POINTS_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/numeric/int128.h"

namespace slackswap {

struct Plan;
struct Schedule;

// The most points a replay records: about one per num_forward_ops / 32
// operators.
inline constexpr int32_t kResumePoints = 32;

// A replay's state at the top of its loop (internal to simulator/replay*.cc;
// opaque to planners). Every field is one the plan does not change before
// that point, so the state is any plan's that resumes from it: the steps'
// time already started (not the time left, which counts the plan's
// rebuilds), and for the cutoff the most, over the checks before it, of
// the compute stream's earliest end less that started time.
struct ReplayState {
  int64_t now = 0;
  int64_t resident = 0;
  int64_t started_ns = 0;
  int64_t compute_earliest_end = 0;
  int32_t ops_done = 0;
  int32_t step = 0;
  int32_t op = 0;
  int32_t k = 0;
  int32_t stage = 0;
  bool compute_busy = false;
  bool compute_slowable = false;
  bool d2h_busy = false;
  bool d2h_moving = false;
  int64_t compute_start = 0;
  int64_t compute_end = 0;
  int64_t compute_alloc = 0;
  absl::int128 compute_work = 0;
  int64_t compute_rate = 0;
  int64_t compute_since = 0;
  int64_t rated_copying = 0;
  int64_t stage_since = 0;
  int32_t d2h_tensor = -1;
  int32_t offloads_done = 0;
  int64_t d2h_start = 0;
  int64_t d2h_end = 0;
  int64_t d2h_latency_end = 0;
  size_t next_offload = 0;
  int64_t last_offload_end = -1;
  // The result so far.
  int64_t events = 0;
  int64_t memory_wait_ns = 0;
  int64_t peak_resident_bytes = 0;
  int64_t contention_ns = 0;
  int64_t uplink_wait_ns = 0;
  int64_t d2h_busy_ns = 0;
  // The cutoff's checks before this point (none: checked is false): the
  // most of max(now, the running step's earliest end) - started_ns, and
  // the clock at the last one.
  bool checked = false;
  int64_t most_ahead_ns = 0;
  int64_t last_check_ns = 0;
};

// Where a replay may resume from: the plan a recorded replay replayed, its
// schedule (DeriveSchedule) and that replay's points
// (SimulationResult::resume_points). All must outlive the replay.
struct ResumeBase {
  const Plan* plan = nullptr;
  const Schedule* schedule = nullptr;
  const std::vector<ReplayState>* points = nullptr;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_RESUME_POINTS_H_
