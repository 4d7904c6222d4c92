// Replays resumed from another plan's saved states (resume_points.h;
// docs/event-model.md, "Replays resumed from another plan's").
#include <algorithm>
#include <limits>
#include <vector>

#include "simulator/replay.h"

namespace slackswap {
namespace internal {

bool Replay::Resumable() const {
  return rates_ != Rates::kShared && !options_.record_timeline &&
         !options_.per_layer_barriers && !fixed_ && !modelled_ &&
         options_.issue_gated == nullptr;
}

int32_t Replay::ResumeIndex() const {
  const ResumeBase& base = *options_.resume_from;
  const std::vector<ReplayState>& points = *base.points;
  if (points.empty()) return -1;
  // A changed decision first matters when its tensor's last forward use
  // ends (what the forward copy does then); a changed issue point only on
  // the H2D stream (below).
  int32_t last_ops = std::numeric_limits<int32_t>::max();
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    if (plan_.decisions[t] != base.plan->decisions[t])
      last_ops = std::min(last_ops, trace_.tensors[t].last_forward_use);
  }
  // The D2H queues agree up to position `same`.
  const std::vector<int32_t>& mine = s_.offload_order;
  const std::vector<int32_t>& theirs = base.schedule->offload_order;
  size_t same = 0;
  while (same < mine.size() && same < theirs.size() &&
         mine[same] == theirs[same]) {
    ++same;
  }
  // The H2D stream does nothing before its head's offload has ended: the
  // head's place in the D2H queue.
  size_t head_at = std::numeric_limits<size_t>::max();
  if (!s_.prefetch_order.empty()) {
    head_at = static_cast<size_t>(
        std::find(mine.begin(), mine.end(), s_.prefetch_order[0]) -
        mine.begin());
  }
  // The leading steps with no rebuild before them and no prefetch to wait
  // for (the forward pass's).
  int32_t plain_ops = 0;
  while (plain_ops < trace_.num_ops() &&
         s_.rebuilds.begin[plain_ops + 1] == 0) {
    ++plain_ops;
  }
  int32_t plain_steps = 0;
  while (plain_steps < plain_ops && s_.prefetches_needed[plain_steps] == 0)
    ++plain_steps;
  const bool cutoff = options_.cutoff_ns != SimulationOptions::kNoCutoff;
  const int64_t link_ahead = link_tail_.empty()
                                 ? std::numeric_limits<int64_t>::min()
                                 : link_tail_[0] - link_before_[0];
  for (size_t i = points.size(); i-- > 0;) {
    const ReplayState& p = points[i];
    const size_t next = p.next_offload;
    const bool valid =
        p.ops_done <= last_ops && p.op < plain_ops && p.step < plain_steps &&
        p.offloads_done <= static_cast<int64_t>(std::min(head_at, same)) &&
        (next < same || (next == same && !p.d2h_busy &&
                         (same == mine.size() ||
                          p.ops_done <= ReadyOp(trace_, mine[same])))) &&
        // This plan's cutoff would not have stopped it before.
        !(cutoff && p.checked &&
          (p.most_ahead_ns + total_steps_ns_ >= options_.cutoff_ns ||
           (link_ahead != std::numeric_limits<int64_t>::min() &&
            p.last_check_ns + link_ahead >= options_.cutoff_ns)));
    if (valid) return static_cast<int32_t>(i);
  }
  return -1;
}

void Replay::Resume() {
  const int32_t i = ResumeIndex();
  if (i < 0) return;
  const std::vector<ReplayState>& points = *options_.resume_from->points;
  LoadState(points[static_cast<size_t>(i)]);
  if (recording_) {
    result_.resume_points.assign(points.begin(), points.begin() + i + 1);
  }
}

void Replay::SyncState(ReplayState& p, bool save) {
  // Each field one way: into `p` where saving, from it where loading.
  const auto sync = [save](auto& saved, auto& live) {
    if (save) {
      saved = live;
    } else {
      live = saved;
    }
  };
  sync(p.now, now_);
  sync(p.resident, resident_);
  sync(p.compute_earliest_end, compute_earliest_end_);
  sync(p.ops_done, ops_done_);
  sync(p.step, step_);
  sync(p.op, op_);
  sync(p.k, k_);
  sync(p.stage, stage_);
  sync(p.compute_busy, compute_busy_);
  sync(p.compute_slowable, compute_slowable_);
  sync(p.compute_start, compute_start_);
  sync(p.compute_end, compute_end_);
  sync(p.compute_alloc, compute_alloc_);
  sync(p.compute_work, compute_work_);
  sync(p.compute_rate, compute_rate_);
  sync(p.compute_since, compute_since_);
  sync(p.rated_copying, rated_copying_);
  sync(p.stage_since, stage_since_);
  sync(p.d2h_busy, d2h_.busy);
  sync(p.d2h_moving, d2h_.moving);
  sync(p.d2h_tensor, d2h_.tensor);
  sync(p.d2h_start, d2h_.start);
  sync(p.d2h_end, d2h_.end);
  sync(p.d2h_latency_end, d2h_.latency_end);
  sync(p.next_offload, next_offload_);
  sync(p.offloads_done, offloads_done_);
  sync(p.last_offload_end, last_offload_end_);
  sync(p.events, result_.events);
  sync(p.memory_wait_ns, result_.memory_wait_ns);
  sync(p.peak_resident_bytes, result_.peak_resident_bytes);
  sync(p.contention_ns, result_.contention_ns);
  sync(p.uplink_wait_ns, result_.uplink_wait_ns);
  sync(p.d2h_busy_ns, result_.d2h_busy_ns);
  sync(p.checked, checked_);
  sync(p.most_ahead_ns, most_ahead_ns_);
  sync(p.last_check_ns, last_check_ns_);
  // The time of the steps started, which this plan's rebuilds do not
  // change (the time left does).
  if (save) {
    p.started_ns = total_steps_ns_ - unstarted_ns_;
  } else {
    unstarted_ns_ = total_steps_ns_ - p.started_ns;
  }
}

void Replay::LoadState(const ReplayState& point) {
  ReplayState p = point;
  SyncState(p, /*save=*/false);
  result_.resumed_events = p.events;
  next_record_ops_ = p.ops_done + record_every_;
  // The copies whose offloads have ended, and the swapped ones whose last
  // forward use has (FinishCompute's flag, read when their offload ends).
  for (int32_t j = 0; j < p.offloads_done; ++j)
    offloaded_[s_.offload_order[j]] = 1;
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    forward_done_[t] = plan_.decisions[t] == Decision::kSwap &&
                       trace_.tensors[t].last_forward_use < p.ops_done;
  }
}

void Replay::SaveState() {
  if (h2d_touched_ || op_ >= trace_.num_forward_ops || step_ != op_ ||
      result_.resume_points.size() >= static_cast<size_t>(kResumePoints)) {
    recording_ = false;
    return;
  }
  next_record_ops_ = ops_done_ + record_every_;
  SyncState(result_.resume_points.emplace_back(), /*save=*/true);
}

}  // namespace internal
}  // namespace slackswap
