#include "planner/exact_search.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "base/status_macros.h"
#include "planner/planner_options.h"
#include "planner/replay_cost.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::max();

// The search passed a limit (ExactSearchOptions): not an error to the
// caller, who gets the best plan so far.
absl::Status GaveUp() { return absl::ResourceExhaustedError("gave up"); }

class Search {
 public:
  Search(const Trace& trace, const Hardware& hardware, int64_t budget,
         const ExactSearchOptions& options)
      : trace_(trace),
        hw_(hardware),
        budget_(budget),
        options_(options),
        plan_(Plan::AllKeep(trace)),
        floor_(trace.ops.size(), 0) {
    sim_.budget_bytes = budget;
    sim_.physics = options.physics;
    gated_.assign(trace.tensors.size(), 0);
    sim_.issue_gated = &gated_;
    node_millis_ = std::max<int64_t>(
        kReplayMillis * kExactNodeElements / NominalReplayWork(trace), 1);
  }

  // Runs the search from `incumbent` (with its replay; feasible, or null).
  // OK once exhaustive; kGaveUp past the options' limits.
  absl::Status Run(const Plan* incumbent, const SimulationResult* replay);

  bool found() const { return best_time_ != kNoTime; }
  const Plan& best() const { return best_; }
  const SimulationResult& best_replay() const { return best_replay_; }
  int64_t replays() const { return replays_; }
  int64_t cost_millis() const { return cost_millis_; }
  int64_t nodes() const { return branches_; }

 private:
  bool MaySwap(int32_t t) const { return !trace_.tensors[t].swap_forbidden; }
  bool MayRecompute(int32_t t) const {
    return !trace_.tensors[t].recompute_forbidden;
  }
  // Adds `bytes` to the floor over ops [first, last]; false if some op there
  // passes the budget (the change is applied either way).
  bool AddFloor(int32_t first, int32_t last, int64_t bytes);
  absl::Status Branch(size_t k, int64_t recompute_ns, int64_t swapped_bytes);
  // A lower bound on the iteration of every plan that swaps at least the
  // tensors decided to be swapped so far: each one's prefetch ends after its
  // offload (the D2H stream takes offloads in production order, none before
  // its producer ends), and the ops from its first backward use on run
  // after that.
  int64_t LinkBound();
  absl::Status Leaf(int64_t recompute_ns);
  absl::Status Issue(size_t k, int32_t previous);
  absl::Status Replay();

  const Trace& trace_;
  const Hardware& hw_;
  const int64_t budget_;
  const ExactSearchOptions& options_;
  SimulationOptions sim_;
  Plan plan_;
  // Bytes that must be resident at each op's start under the decisions so
  // far (undecided tensors at their least).
  std::vector<int64_t> floor_;
  std::vector<int32_t> order_;        // tensors to decide, largest first
  std::vector<int32_t> swap_order_;   // the same in production order
  std::vector<int64_t> ideal_start_;  // per op, and the end
  struct UseBound {
    int32_t first_use;
    int64_t offload_end;
    int64_t h2d_ns;
    bool operator<(const UseBound& o) const {
      return first_use != o.first_use ? first_use < o.first_use
                                      : offload_end < o.offload_end;
    }
  };
  std::vector<UseBound> by_use_;  // scratch for LinkBound

  // The leaf being searched: its swaps in prefetch order and their needs.
  std::vector<int32_t> swaps_;
  std::vector<int32_t> need_;
  Schedule schedule_;
  std::vector<uint8_t> gated_;  // of the last replay (issue_gated)
  int64_t leaf_bound_ = 0;
  bool leaf_done_ = false;

  Plan best_;
  SimulationResult best_replay_;
  int64_t best_time_ = kNoTime;
  int64_t replays_ = 0;
  int64_t branches_ = 0;  // nodes visited, for the stop poll
  int64_t node_millis_ = 1;
  int64_t cost_millis_ = 0;
};

bool Search::AddFloor(int32_t first, int32_t last, int64_t bytes) {
  bool fits = true;
  for (int32_t o = first; o <= last; ++o) {
    floor_[o] += bytes;
    if (floor_[o] > budget_) fits = false;
  }
  return fits;
}

absl::Status Search::Run(const Plan* incumbent,
                         const SimulationResult* replay) {
  if (incumbent != nullptr && replay != nullptr && replay->feasible) {
    best_ = *incumbent;
    best_replay_ = *replay;
    best_time_ = replay->iteration_ns;
  }
  // The least each tensor can be resident: kept from production to its last
  // use if it must be kept, otherwise only while the forward pass reads it
  // and from its first backward use on.
  bool fits = true;
  for (int32_t o = 0; o < trace_.num_ops(); ++o) {
    floor_[o] += trace_.transient_bytes(o);
    if (floor_[o] > budget_) fits = false;
  }
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    const Tensor& tensor = trace_.tensors[t];
    const bool fixed_keep =
        tensor.size_bytes == 0 || (!MaySwap(t) && !MayRecompute(t));
    if (fixed_keep) {
      fits &= AddFloor(tensor.producer_op, tensor.last_backward_use,
                       tensor.size_bytes);
    } else {
      fits &= AddFloor(tensor.producer_op, tensor.last_forward_use,
                       tensor.size_bytes);
      fits &= AddFloor(tensor.first_backward_use, tensor.last_backward_use,
                       tensor.size_bytes);
      order_.push_back(t);
    }
  }
  if (!fits) return absl::OkStatus();  // nothing can fit
  std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) {
    return trace_.tensors[a].size_bytes > trace_.tensors[b].size_bytes;
  });
  // The D2H stream's order, for LinkBound.
  swap_order_ = order_;
  std::sort(swap_order_.begin(), swap_order_.end(), [&](int32_t a, int32_t b) {
    const int32_t pa = trace_.tensors[a].producer_op;
    const int32_t pb = trace_.tensors[b].producer_op;
    return pa != pb ? pa < pb : a < b;
  });
  ideal_start_.assign(trace_.ops.size() + 1, 0);
  for (int32_t o = 0; o < trace_.num_ops(); ++o)
    ideal_start_[o + 1] = ideal_start_[o] + trace_.ops[o].duration_ns;
  return Branch(0, 0, 0);
}

int64_t Search::LinkBound() {
  // Offloads: FIFO in production order, none before its producer ends.
  int64_t d2h_free = 0;
  by_use_.clear();
  for (int32_t t : swap_order_) {
    if (plan_.decisions[t] != Decision::kSwap) continue;
    const Tensor& tensor = trace_.tensors[t];
    d2h_free = std::max(d2h_free, ideal_start_[tensor.producer_op + 1]) +
               TransferNs(tensor.size_bytes, hw_.d2h_bytes_per_second,
                          hw_.transfer_latency_ns);
    by_use_.push_back({tensor.first_backward_use, d2h_free,
                       TransferNs(tensor.size_bytes, hw_.h2d_bytes_per_second,
                                  hw_.transfer_latency_ns)});
  }
  // Prefetches: every tensor first used at or before op o is back before o
  // starts (its need comes no later than its first use), one after another
  // on the H2D stream and none before the earliest of their offloads ends;
  // the ops from o on follow.
  std::sort(by_use_.begin(), by_use_.end());
  int64_t bound = 0, h2d = 0, earliest = std::numeric_limits<int64_t>::max();
  for (const UseBound& u : by_use_) {
    earliest = std::min(earliest, u.offload_end);
    h2d += u.h2d_ns;
    const int64_t back = std::max(earliest + h2d, u.offload_end + u.h2d_ns);
    bound = std::max(bound, back + trace_.ideal_ns - ideal_start_[u.first_use]);
  }
  return bound;
}

absl::Status Search::Branch(size_t k, int64_t recompute_ns,
                            int64_t swapped_bytes) {
  // Pruned nodes never reach a replay: poll the stop here too.
  if (++branches_ % 4096 == 0 && options_.should_stop &&
      options_.should_stop()) {
    return PlanningStopped();
  }
  cost_millis_ += node_millis_;
  if (options_.max_cost_millis > 0 && cost_millis_ > options_.max_cost_millis) {
    return GaveUp();
  }
  // Every recomputed tensor is rebuilt once: no plan below can be faster.
  if (trace_.ideal_ns + recompute_ns >= best_time_) return absl::OkStatus();
  if (swapped_bytes > 0 && LinkBound() >= best_time_) return absl::OkStatus();
  if (k == order_.size()) return Leaf(recompute_ns);
  const int32_t t = order_[k];
  const Tensor& tensor = trace_.tensors[t];
  // Keep: resident between its last forward and first backward use too.
  {
    const bool fits =
        AddFloor(tensor.last_forward_use + 1, tensor.first_backward_use - 1,
                 tensor.size_bytes);
    if (fits) {
      plan_.decisions[t] = Decision::kKeep;
      SLACKSWAP_RETURN_IF_ERROR(Branch(k + 1, recompute_ns, swapped_bytes));
    }
    AddFloor(tensor.last_forward_use + 1, tensor.first_backward_use - 1,
             -tensor.size_bytes);
  }
  const int64_t cap = hw_.host_pinned_memory_bytes > 0
                          ? hw_.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();
  if (MaySwap(t) && swapped_bytes + tensor.size_bytes <= cap) {
    plan_.decisions[t] = Decision::kSwap;
    SLACKSWAP_RETURN_IF_ERROR(
        Branch(k + 1, recompute_ns, swapped_bytes + tensor.size_bytes));
  }
  if (MayRecompute(t)) {
    plan_.decisions[t] = Decision::kRecompute;
    SLACKSWAP_RETURN_IF_ERROR(
        Branch(k + 1, recompute_ns + tensor.recompute_ns, swapped_bytes));
  }
  plan_.decisions[t] = Decision::kKeep;
  return absl::OkStatus();
}

absl::Status Search::Leaf(int64_t recompute_ns) {
  need_ = DeriveNeeds(trace_, plan_.decisions);
  swaps_.clear();
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    if (plan_.decisions[t] == Decision::kSwap) swaps_.push_back(t);
  }
  std::sort(swaps_.begin(), swaps_.end(), [&](int32_t a, int32_t b) {
    return need_[a] != need_[b] ? need_[a] < need_[b] : a < b;
  });
  leaf_bound_ = trace_.ideal_ns + recompute_ns;
  leaf_done_ = false;
  // Issue points are not part of the schedule: derive it once per vector.
  schedule_ = DeriveSchedule(trace_, plan_);
  if (options_.earliest_issue &&
      EarliestIssueIsBest(options_.physics, sim_.prefetch_admission)) {
    // None faster than every swap at the earliest: one replay.
    for (int32_t t : swaps_)
      plan_.prefetch_issue_op[t] = trace_.tensors[t].last_forward_use + 1;
    return Replay();
  }
  return Issue(0, 0);
}

absl::Status Search::Issue(size_t k, int32_t previous) {
  if (leaf_done_) return absl::OkStatus();
  if (k == swaps_.size()) return Replay();
  const int32_t t = swaps_[k];
  const int32_t first =
      std::max(trace_.tensors[t].last_forward_use + 1, previous);
  // Latest first: it holds the least memory.
  for (int32_t issue = need_[t]; issue >= first && !leaf_done_; --issue) {
    plan_.prefetch_issue_op[t] = issue;
    SLACKSWAP_RETURN_IF_ERROR(Issue(k + 1, issue));
    // The replays below shared everything up to this prefetch's start (the
    // H2D stream takes prefetches in order): if it never waited for its issue
    // point, an earlier one changes nothing.
    if (!gated_[t]) break;
  }
  return absl::OkStatus();
}

absl::Status Search::Replay() {
  if (options_.max_replays > 0 && replays_ >= options_.max_replays)
    return GaveUp();
  if (++replays_ % 1024 == 0 && options_.should_stop &&
      options_.should_stop()) {
    return PlanningStopped();
  }
  std::fill(gated_.begin(), gated_.end(), 0);
  SimulationResult r = SimulateSchedule(trace_, hw_, plan_, schedule_, sim_);
  cost_millis_ += ReplayCostMillis(trace_, r);
  if (!r.feasible) return absl::OkStatus();
  if (r.iteration_ns < best_time_) {
    best_time_ = r.iteration_ns;
    best_ = plan_;
    best_replay_ = std::move(r);
  }
  // No stall: nothing with these decisions is faster.
  if (best_time_ <= leaf_bound_) leaf_done_ = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ExactSearchResult> SearchExact(
    const Trace& trace, const Hardware& hardware, int64_t budget_bytes,
    const ExactSearchOptions& options, const Plan* incumbent,
    const SimulationResult* incumbent_replay) {
  Search search(trace, hardware, budget_bytes, options);
  const absl::Status status = search.Run(incumbent, incumbent_replay);
  if (!status.ok() && !absl::IsResourceExhausted(status)) return status;
  ExactSearchResult result;
  result.finished = status.ok();
  result.found = search.found();
  if (result.found) {
    result.best = search.best();
    result.replay = search.best_replay();
  }
  result.replays = search.replays();
  result.cost_millis = search.cost_millis();
  result.nodes = search.nodes();
  return result;
}

}  // namespace slackswap
