// File: plan_draft.h
//
// The planner's working model of a plan under construction. It keeps, for the
// current decisions, every tensor's need and release operator and the
// resident bytes at the start of every operator, assuming the iteration runs
// without stalls (the ideal timeline). Changing one decision updates the
// profile in O((1 + affected recompute inputs) log ops).
//
// The draft is an estimate that guides the two passes; the event model
// (event_model.h) is the judge, and SlackSwap's validation replays every
// candidate plan there.
//
// Cost: a decision change refreshes the tensor and its recompute inputs, and
// follows inputs whose need moved through recomputed inputs (the rebuild
// chain below the tensor): O((chain + inputs) log ops). A tensor with many
// recomputed dependents finds their earliest and latest need in a segment
// tree (O(log dependents)) rather than a scan, so a tensor that a hundred
// thousand rebuilds read costs no more than one that two read.
//
// Lifetimes, as operator ranges [first, last] at whose start the tensor is
// resident:
//   keep:      [producer, release]
//   recompute: [producer, last forward use] and [need, release]
//   swap:      [producer, forward_free] and [issue, release]
// where need is the first backward op that reads the tensor directly or
// through a rebuild, release the later of its last backward use and the need
// of its last recomputed dependent, and forward_free the last op that starts
// before its offload ends (at least the last forward use).
#ifndef SLACKSWAP_PLANNER_PLAN_DRAFT_H_
#define SLACKSWAP_PLANNER_PLAN_DRAFT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "simulator/plan.h"
#include "simulator/segment_tree.h"
#include "simulator/trace.h"

namespace slackswap {

// Start time of every operator when nothing stalls, plus the forward end.
struct IdealTimeline {
  explicit IdealTimeline(const Trace& trace);
  std::vector<int64_t> op_start_ns;  // size ops + 1: the last entry is the end
  int64_t forward_end_ns = 0;

  int64_t End(int32_t op) const { return op_start_ns[op + 1]; }
  // The last operator that starts strictly before `time_ns` (-1 if none).
  int32_t LastOpStartingBefore(int64_t time_ns) const;
};

class PlanDraft {
 public:
  // All keep. `trace` must outlive the draft.
  explicit PlanDraft(const Trace& trace);

  const Plan& plan() const { return plan_; }
  Decision decision(int32_t t) const { return plan_.decisions[t]; }
  int32_t need(int32_t t) const { return need_[t]; }
  int32_t release(int32_t t) const { return release_[t]; }

  // Changes t's decision. For kSwap, `forward_free_op` and `issue_op` place
  // the two lifetimes (see above).
  void SetKeep(int32_t t) { Set(t, Decision::kKeep, 0, 0); }
  void SetRecompute(int32_t t) { Set(t, Decision::kRecompute, 0, 0); }
  void SetSwap(int32_t t, int32_t forward_free_op, int32_t issue_op) {
    Set(t, Decision::kSwap, forward_free_op, issue_op);
  }

  // Resident bytes at the start of each op (allocations of the op included).
  int64_t PeakBytes() const { return profile_.Max().first; }
  int32_t PeakOp() const { return profile_.Max().second; }
  // The highest resident bytes over [first_op, last_op] and where.
  std::pair<int64_t, int32_t> PeakIn(int32_t first_op, int32_t last_op) const {
    return profile_.Max(first_op, last_op + 1);
  }
  int64_t BytesAt(int32_t op) const { return profile_.Get(op); }

  // True if t is resident at the start of `op` in the current draft.
  bool ResidentAt(int32_t t, int32_t op) const;

  // The length of t's rebuild chain if t were recomputed: t and every
  // recomputed tensor its rebuild must rebuild first (through recomputed
  // recompute inputs, transitively). Counting stops past `limit`, so the cost
  // is O(limit x inputs) however long the chain. Changing t's decision
  // refreshes at most its chain (and the chain's inputs), so planners keep
  // chains short.
  int32_t RebuildChainSize(int32_t t, int32_t limit) const {
    return RebuildChainSize(absl::MakeConstSpan(&t, 1), limit);
  }
  // The same for several tensors recomputed at once (a block): their chains
  // together.
  int32_t RebuildChainSize(absl::Span<const int32_t> tensors,
                           int32_t limit) const;

  // Tensors whose lifetime a decision change has moved, in all (the work the
  // draft has done: tests bound it).
  int64_t lifetime_updates() const { return lifetime_updates_; }

 private:
  struct Lifetime {
    int32_t first_begin = 0, first_end = -1;  // inclusive; empty if end < begin
    int32_t second_begin = 0, second_end = -1;

    bool operator==(const Lifetime& o) const {
      return first_begin == o.first_begin && first_end == o.first_end &&
             second_begin == o.second_begin && second_end == o.second_end;
    }
  };

  // The earliest and latest need of t's recomputed dependents, or
  // {INT32_MAX, INT32_MIN} when none is recomputed.
  std::pair<int32_t, int32_t> DependentNeeds(int32_t t) const;
  // Tells t's recompute inputs with many dependents (the segment tree) t's
  // current need, or that it is not recomputed.
  void Publish(int32_t t);

  void Set(int32_t t, Decision d, int32_t forward_free_op, int32_t issue_op);
  // Recomputes need, release and lifetime of t from the current decisions.
  // Returns true if t's need changed.
  bool Refresh(int32_t t);
  void Apply(const Lifetime& lifetime, int64_t bytes);

  const Trace& trace_;
  Plan plan_;
  std::vector<int32_t> need_;
  std::vector<int32_t> release_;
  std::vector<int32_t> forward_free_;
  std::vector<Lifetime> lifetime_;
  MaxSegmentTree profile_;
  std::vector<int32_t> stack_;  // scratch for Set
  int64_t lifetime_updates_ = 0;

  // Rows of trace.recompute_dependents longer than kScannedDependents keep
  // their dependents' needs in a min/max segment tree over one slot per
  // (input, dependent) edge: slot_of_edge_[k] is the slot of the k-th item
  // of trace.recompute_inputs (-1 for a short row), row_slots_[t] the first
  // slot of t's row (-1 for a short row).
  std::vector<int32_t> slot_of_edge_;
  std::vector<int32_t> row_slots_;
  std::vector<int32_t> published_;  // per tensor: need if recomputed, else -1
  int32_t num_slots_ = 0;
  std::vector<int32_t> slot_min_;  // iterative trees of 2 * num_slots_ nodes
  std::vector<int32_t> slot_max_;

  // Scratch for RebuildChainSize: visited when visit_mark_[t] == visit_epoch_.
  mutable std::vector<uint32_t> visit_mark_;
  mutable uint32_t visit_epoch_ = 0;
  mutable std::vector<int32_t> visit_stack_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_PLAN_DRAFT_H_
