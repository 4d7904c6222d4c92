#include "planner/polish.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>
#include <vector>

#include "base/workers.h"
#include "planner/move_order.h"
#include "planner/recompute_pass.h"
#include "planner/replay_against.h"
#include "planner/replay_cost.h"
#include "planner/trades.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

enum class Issue : uint8_t { kLatest, kEarliest, kHalfway, kEarlier, kLater };

struct Move {
  int32_t tensor;
  Decision decision;
  Issue issue;
};

// The kind of `move` on a tensor whose decision is `from`: the decisions
// before and after and the issue point's rule.
constexpr int kMoveKinds = 3 * 3 * 5;
int MoveKind(Decision from, const Move& move) {
  return static_cast<int>(from) * 15 + static_cast<int>(move.decision) * 5 +
         static_cast<int>(move.issue);
}

class Polisher {
 public:
  Polisher(const Trace& trace, const Hardware& hardware, int64_t budget,
           const PolishOptions& options)
      : trace_(trace),
        hw_(hardware),
        options_(options),
        run_starts_(BlockRunStarts(trace)),
        max_replay_millis_(MaxReplayMillis(trace, hardware, options.physics)),
        transfer_times_(
            ComputeTransferTimes(trace, hardware, options.physics)) {
    sim_.budget_bytes = budget;
    sim_.per_layer_barriers = options.per_layer_barriers;
    sim_.prefetch_admission = options.prefetch_admission;
    sim_.physics = options.physics;
    sim_.record_resume_points = options.resume;
    sim_.transfer_times = &transfer_times_;
  }

  PolishResult Run(Plan& plan, SimulationResult& replay);
  // The budget spent, in replays (replay_cost.h), rounded up.
  int64_t Spent() const {
    return (spent_millis_ + kReplayMillis - 1) / kReplayMillis;
  }

 private:
  // Out of budget once the dearest replay (MaxReplayMillis) would not fit.
  bool OutOfBudget() const {
    return spent_millis_ + max_replay_millis_ >
           options_.max_replays * kReplayMillis;
  }
  // Replays left, rounded down.
  int64_t Left() const {
    return std::max<int64_t>(
        options_.max_replays -
            (spent_millis_ + kReplayMillis - 1) / kReplayMillis,
        0);
  }
  // A candidate plan: built and replayed ahead of its turn (ScanInOrder's
  // prepare, on any thread), then charged and judged in order.
  struct Candidate {
    bool replayed = false;
    Plan plan;
    int64_t swapped = 0;
    SimulationResult replay;
    std::vector<uint8_t> waited;  // its replay's marks
    std::vector<int32_t> need;    // its needs where MakeCandidate made them
  };
  // Replays c.plan against `reference` (ReplayAgainst; with c.need where
  // `with_need`), resuming from the states of `from`'s replay `from_replay`
  // (the plan c was made from) where DeriveFor has `from`'s schedule. Reads
  // the search's state only.
  void Prepare(Candidate& c, const SimulationResult& reference, bool with_need,
               const Plan& from, const SimulationResult& from_replay) const {
    ResumeBase base;
    const bool resume = options_.resume && !from_replay.resume_points.empty() &&
                        plan_schedule_valid_ &&
                        from.decisions == plan_schedule_for_;
    if (resume) base = {&from, &plan_schedule_, &from_replay.resume_points};
    c.replay = ReplayAgainst(
        trace_, hw_, c.plan, sim_, reference, &c.waited, SameSchedule(c.plan),
        with_need ? &c.need : nullptr, resume ? &base : nullptr);
    c.replayed = true;
  }
  // Charges c's replay; where it is better than `replay`, c becomes the
  // plan, its replay's marks `waited` (true).
  bool Judge(Candidate& c, Plan& plan, SimulationResult& replay,
             std::vector<uint8_t>& waited) {
    spent_millis_ += ReplayCostMillis(trace_, c.replay);
    if (!Better(c.replay, replay)) return false;
    plan = std::move(c.plan);
    replay = std::move(c.replay);
    waited = std::move(c.waited);
    return true;
  }
  std::vector<Candidate> Slots() const {
    return std::vector<Candidate>(MaxScanBatch(options_.workers));
  }
  // Whether `candidate`, a move on t from `plan`, differs from it only in an
  // earlier issue point of t, where the plan's replay never found t's
  // prefetch before its issue point (waited_): its replay would be the
  // plan's, which it cannot beat; it is not replayed (or charged).
  bool ReplaysAsThePlan(const Plan& plan, const Plan& candidate,
                        int32_t t) const {
    if (!options_.skip_same_replays || waited_.empty() || waited_[t] ||
        plan.decisions[t] != Decision::kSwap ||
        candidate.prefetch_issue_op[t] >= plan.prefetch_issue_op[t] ||
        candidate.decisions != plan.decisions) {
      return false;
    }
    for (int32_t u = 0; u < trace_.num_tensors(); ++u) {
      if (u != t && candidate.prefetch_issue_op[u] != plan.prefetch_issue_op[u])
        return false;
    }
    return true;
  }
  // Once the plan completes where EarliestIssueIsBest holds: its swaps moved
  // to the earliest points of their windows (a replay, charged) and kept
  // there from then on (earliest_).
  void IssueAtEarliest(Plan& plan, SimulationResult& replay);
  // Derives the schedule of the plan the moves start from (one thread).
  void DeriveFor(const Plan& plan) {
    if (plan_schedule_valid_ && plan.decisions == plan_schedule_for_) return;
    DeriveSchedule(trace_, plan, plan_schedule_);
    plan_schedule_for_ = plan.decisions;
    plan_schedule_valid_ = true;
  }
  // DeriveFor's schedule where `candidate` has its decisions (a move of an
  // issue point: a schedule follows from the decisions alone), else null.
  const Schedule* SameSchedule(const Plan& candidate) const {
    return plan_schedule_valid_ && candidate.decisions == plan_schedule_for_
               ? &plan_schedule_
               : nullptr;
  }
  bool Allowed(int32_t t, Decision d) const {
    const Tensor& tensor = trace_.tensors[t];
    if (d == Decision::kSwap)
      return options_.allow_swap && !tensor.swap_forbidden;
    if (d == Decision::kRecompute) return !tensor.recompute_forbidden;
    return true;
  }
  // The window of t's issue point under `need`.
  std::pair<int32_t, int32_t> Window(int32_t t,
                                     const std::vector<int32_t>& need) const {
    const IssueWindow w = IssueWindowOf(
        trace_, t, need[t], options_.per_layer_barriers, run_starts_);
    return {w.earliest, std::max(w.earliest, w.latest)};
  }
  std::vector<Move> Moves(const Plan& plan,
                          const SimulationResult& replay) const;
  bool OnTarget(const SimulationResult& r) const {
    return r.feasible && r.iteration_ns <= options_.target_ns;
  }
  // `move` applied to `plan` (swapping `swapped` bytes; `need` as Apply's):
  // false when it changes nothing or swaps more than `cap`.
  bool MakeCandidate(const Move& move, const Plan& plan, int64_t swapped,
                     int64_t cap, Plan& next, int64_t& next_swapped,
                     std::vector<int32_t>& need) const;
  // One scan of `moves`: the best change (Steepest) or each first that
  // improves (FirstImproving) kept. False when the call was stopped.
  bool Steepest(const std::vector<Move>& moves, Plan& plan,
                SimulationResult& replay, int64_t& swapped, int64_t cap,
                PolishResult& result);
  bool FirstImproving(const std::vector<Move>& moves, Plan& plan,
                      SimulationResult& replay, int64_t& swapped, int64_t cap,
                      PolishResult& result);
  // Tries changing two tensors at once; applies the first pair that improves
  // the plan (true), or returns false (none, or no budget to scan them).
  bool TryPairs(Plan& plan, SimulationResult& replay, int64_t& swapped,
                int64_t cap, PolishResult& result);
  // One scan of the memory trades or (`link`) the link trades (Trades),
  // each kept where it improves the plan. True when one was kept.
  bool TradeScan(Plan& plan, SimulationResult& replay, PolishResult& result,
                 bool link);
  // `plan` with `move` applied and every issue point back in its window;
  // `need` receives its needs (DeriveNeeds) unless SameSchedule has them.
  Plan Apply(const Plan& plan, const Move& move,
             std::vector<int32_t>& need) const;
  Plan Apply(const Plan& plan, const Move& move) const {
    thread_local std::vector<int32_t> need;  // (its memory reused)
    return Apply(plan, move, need);
  }
  // A move on tensor t makes (Apply) the plan with t's decision and issue
  // point set: those two name it among the moves on the same plan.
  int64_t CandidateKey(const Plan& candidate, int32_t t) const {
    return (static_cast<int64_t>(t) * 3 +
            static_cast<int64_t>(candidate.decisions[t])) *
               (trace_.num_ops() + 1) +
           candidate.prefetch_issue_op[t];
  }
  // Whether `candidate` (a move on t) was replayed against the plan as it
  // is (after result.changes changes) and not kept (made by another move,
  // or tried after the scan before's last change): it would end the same.
  bool KnownToFail(const Plan& candidate, int32_t t,
                   const PolishResult& result) const {
    return options_.skip_known_failures && result.changes == failed_changes_ &&
           failed_.count(CandidateKey(candidate, t)) > 0;
  }

  const Trace& trace_;
  const Hardware& hw_;
  const PolishOptions& options_;
  const std::vector<int32_t> run_starts_;
  const int64_t max_replay_millis_;
  const TransferTimes transfer_times_;  // (sim_'s)
  SimulationOptions sim_;
  int64_t spent_millis_ = 0;
  // Per kind of move (MoveKind): the candidates of that kind replayed in
  // this local search's scans of first improvements, and those kept.
  std::array<int64_t, kMoveKinds> tried_{};
  std::array<int64_t, kMoveKinds> kept_{};
  // The candidates FirstImproving replayed against the plan after
  // `failed_changes_` changes and did not keep (CandidateKey).
  std::set<int64_t> failed_;
  int32_t failed_changes_ = 0;
  // The plan's replay's marks (SimulationOptions::issue_waited); empty while
  // not known (the plan the search started from).
  std::vector<uint8_t> waited_;
  // The plan's swaps are issued at the earliest points of their windows, and
  // every candidate's are (IssueAtEarliest); `earliest_tried_`: whether
  // that was tried.
  bool earliest_ = false;
  bool earliest_tried_ = false;
  // DeriveFor's schedule and the decisions it was derived for.
  Schedule plan_schedule_;
  std::vector<Decision> plan_schedule_for_;
  bool plan_schedule_valid_ = false;
};

std::vector<Move> Polisher::Moves(const Plan& plan,
                                  const SimulationResult& replay) const {
  const std::vector<int32_t> order =
      TensorsInMoveOrder(trace_, options_.focus, plan, replay);
  // Where prefetches stall the plan, its link is the bottleneck: a swap
  // rebuilt instead is the most promising change to a swap.
  const bool link_bound = replay.feasible && replay.prefetch_wait_ns > 0;
  std::vector<Move> moves;
  for (int32_t t : order) {
    const Decision d = plan.decisions[t];
    auto add = [&](Decision to, Issue issue) {
      // With the swaps issued at the earliest (earliest_), an issue point
      // does not move, and a new swap's is the earliest.
      if (earliest_ && to == Decision::kSwap &&
          (d == Decision::kSwap || issue != Issue::kEarliest)) {
        return;
      }
      if (Allowed(t, to)) moves.push_back({t, to, issue});
    };
    switch (d) {
      case Decision::kRecompute:
        add(Decision::kSwap, Issue::kLatest);
        add(Decision::kSwap, Issue::kHalfway);
        add(Decision::kSwap, Issue::kEarliest);
        add(Decision::kKeep, Issue::kLatest);
        break;
      case Decision::kSwap:
        if (link_bound) add(Decision::kRecompute, Issue::kLatest);
        add(Decision::kKeep, Issue::kLatest);
        add(Decision::kSwap, Issue::kEarlier);
        add(Decision::kSwap, Issue::kLater);
        add(Decision::kSwap, Issue::kEarliest);
        add(Decision::kSwap, Issue::kHalfway);
        add(Decision::kSwap, Issue::kLatest);
        if (!link_bound) add(Decision::kRecompute, Issue::kLatest);
        break;
      case Decision::kKeep:
        add(Decision::kSwap, Issue::kLatest);
        add(Decision::kSwap, Issue::kEarliest);
        add(Decision::kRecompute, Issue::kLatest);
        break;
    }
  }
  // Once the plan completes, the kinds of move kept most often so far come
  // first: by (kept + 1/2) / (replayed + 1), so that a kind not tried yet
  // ranks with one kept half the time; within a kind, in the order above.
  // Where the budget ends before the search converges, most of it went to
  // kinds that are seldom kept (on large DAGs a rebuilt tensor swapped
  // instead: hundreds replayed, a handful kept).
  if (replay.feasible && options_.adaptive_order) {
    std::stable_sort(moves.begin(), moves.end(),
                     [&](const Move& a, const Move& b) {
                       const int ka = MoveKind(plan.decisions[a.tensor], a);
                       const int kb = MoveKind(plan.decisions[b.tensor], b);
                       return (2 * kept_[ka] + 1) * (tried_[kb] + 1) >
                              (2 * kept_[kb] + 1) * (tried_[ka] + 1);
                     });
  }
  return moves;
}

Plan Polisher::Apply(const Plan& plan, const Move& move,
                     std::vector<int32_t>& derived) const {
  Plan next = plan;
  next.decisions[move.tensor] = move.decision;
  const Schedule* same = SameSchedule(next);
  if (same == nullptr) DeriveNeeds(trace_, next.decisions, derived);
  const std::vector<int32_t>& need = same != nullptr ? same->need_op : derived;
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    if (next.decisions[t] != Decision::kSwap) {
      next.prefetch_issue_op[t] = 0;
      continue;
    }
    const auto [earliest, latest] = Window(t, need);
    int32_t issue = next.prefetch_issue_op[t];
    if (t == move.tensor) {
      switch (move.issue) {
        case Issue::kLatest:
          issue = latest;
          break;
        case Issue::kEarliest:
          issue = earliest;
          break;
        case Issue::kHalfway:
          issue = earliest + (latest - earliest) / 2;
          break;
        case Issue::kEarlier:
          issue = plan.prefetch_issue_op[t] - 1;
          break;
        case Issue::kLater:
          issue = plan.prefetch_issue_op[t] + 1;
          break;
      }
    }
    next.prefetch_issue_op[t] =
        earliest_ ? earliest : std::clamp(issue, earliest, latest);
  }
  return next;
}

void Polisher::IssueAtEarliest(Plan& plan, SimulationResult& replay) {
  earliest_tried_ = true;
  if (!options_.earliest_issue ||
      !EarliestIssueIsBest(options_.physics, options_.prefetch_admission)) {
    return;
  }
  Plan earliest = IssuedAtEarliest(trace_, plan);
  if (earliest.prefetch_issue_op != plan.prefetch_issue_op) {
    SimulationResult r = SimulateSchedule(
        trace_, hw_, earliest, DeriveSchedule(trace_, earliest), sim_);
    spent_millis_ += ReplayCostMillis(trace_, r);
    // (Never slower where EarliestIssueIsBest holds; checked all the same.)
    if (!r.feasible || r.iteration_ns > replay.iteration_ns) return;
    plan = std::move(earliest);
    replay = std::move(r);
    waited_.clear();  // (marks only moves of issue points use)
  }
  earliest_ = true;
}

PolishResult Polisher::Run(Plan& plan, SimulationResult& replay) {
  PolishResult result;
  const int64_t cap = hw_.host_pinned_memory_bytes > 0
                          ? hw_.host_pinned_memory_bytes
                          : std::numeric_limits<int64_t>::max();
  int64_t swapped = SwappedBytes(trace_, plan);
  bool improved = !options_.trades_only;  // (no single changes: trades)
  bool pairs = false;        // single changes first; pairs once they stall
  bool traded = false;       // memory trades scanned since the last change
  bool link_traded = false;  // link and room trades scanned in this call
  while (!OutOfBudget() && !OnTarget(replay)) {
    if (!earliest_tried_ && replay.feasible) IssueAtEarliest(plan, replay);
    // Memory trades before each scan of single changes that follows a change:
    // no single change makes them (keeping a rebuilt tensor alone needs
    // memory the plan lacks; rebuilding a kept one alone only adds time).
    if (replay.feasible && !traded && options_.focus.empty()) {
      traded = true;
      if (TradeScan(plan, replay, result, false))
        improved = !options_.trades_only;
      if (OutOfBudget() || OnTarget(replay)) break;
    }
    // Where no single change improves the plan, the link and room trades,
    // once a call (a few replays each); one kept, single changes again.
    if (!improved && !link_traded && replay.feasible &&
        options_.focus.empty() &&
        (options_.link_trades || options_.room_trades)) {
      link_traded = true;
      if (TradeScan(plan, replay, result, true)) {
        swapped = SwappedBytes(trace_, plan);  // (no more bytes)
        traded = false;
        improved = true;
        continue;
      }
      if (OutOfBudget() || OnTarget(replay)) break;
    }
    if (options_.trades_only) break;
    if (!improved) {
      // No single change helps: try two at once (one tensor takes another's
      // role), if the budget can scan them.
      if (pairs || !options_.focus.empty() ||
          !TryPairs(plan, replay, swapped, cap, result)) {
        // (Pairs cut short by the budget or a stop: not a local optimum.)
        result.converged = !OutOfBudget() && !(options_.stop != nullptr &&
                                               options_.stop->stopped());
        break;
      }
      pairs = true;
    }
    const std::vector<Move> moves = Moves(plan, replay);
    // Where the budget can scan the whole neighbourhood (small traces), take
    // its best change (steepest descent); otherwise the first that improves.
    const bool steepest = static_cast<int64_t>(moves.size()) * 4 <= Left();
    const int32_t before = result.changes;
    const bool stopped =
        steepest ? !Steepest(moves, plan, replay, swapped, cap, result)
                 : !FirstImproving(moves, plan, replay, swapped, cap, result);
    if (stopped) return result;
    improved = result.changes > before;
    if (improved) pairs = traded = false;
  }
  return result;
}

bool Polisher::MakeCandidate(const Move& move, const Plan& plan,
                             int64_t swapped, int64_t cap, Plan& next,
                             int64_t& next_swapped,
                             std::vector<int32_t>& need) const {
  const Decision from = plan.decisions[move.tensor];
  const int64_t size = trace_.tensors[move.tensor].size_bytes;
  next_swapped = swapped - (from == Decision::kSwap ? size : 0) +
                 (move.decision == Decision::kSwap ? size : 0);
  if (next_swapped > cap) return false;
  next = Apply(plan, move, need);
  return next.decisions != plan.decisions ||
         next.prefetch_issue_op != plan.prefetch_issue_op;
}

bool Polisher::Steepest(const std::vector<Move>& moves, Plan& plan,
                        SimulationResult& replay, int64_t& swapped, int64_t cap,
                        PolishResult& result) {
  // Each move against the best candidate so far (the plan at first), which
  // it replaces where better; the best is kept at the end.
  Plan best_plan = plan;
  SimulationResult best_replay = replay;
  std::vector<uint8_t> best_waited;
  int64_t best_swapped = swapped;
  bool have_best = false;
  DeriveFor(plan);
  std::vector<Candidate> slots = Slots();
  bool stopped = false;
  const auto batch = [&] {
    stopped = options_.stop != nullptr && options_.stop->Stop();
    return !stopped && !OutOfBudget();
  };
  const auto prepare = [&](size_t slot, size_t i) {
    Candidate& c = slots[slot];
    c.replayed = false;
    if (MakeCandidate(moves[i], plan, swapped, cap, c.plan, c.swapped,
                      c.need) &&
        !ReplaysAsThePlan(plan, c.plan, moves[i].tensor)) {
      Prepare(c, best_replay, /*with_need=*/true, plan, replay);
    }
  };
  const auto judge = [&](size_t slot, size_t) {
    Candidate& c = slots[slot];
    if (!c.replayed) return ScanVerdict::kNext;
    if (OutOfBudget()) return ScanVerdict::kStop;
    const int64_t next_swapped = c.swapped;
    if (!Judge(c, best_plan, best_replay, best_waited)) {
      return ScanVerdict::kNext;
    }
    best_swapped = next_swapped;
    have_best = true;
    return ScanVerdict::kChanged;
  };
  ScanInOrder(options_.workers, moves.size(), prepare, judge, batch);
  if (stopped) return false;
  if (have_best) {
    plan = std::move(best_plan);
    replay = std::move(best_replay);
    waited_ = std::move(best_waited);
    swapped = best_swapped;
    ++result.changes;
  }
  return true;
}

bool Polisher::FirstImproving(const std::vector<Move>& moves, Plan& plan,
                              SimulationResult& replay, int64_t& swapped,
                              int64_t cap, PolishResult& result) {
  // The moves in order, each against the plan as it is then; the first that
  // improves it is kept and the scan goes on from the next. With workers,
  // the next few candidates are replayed at once against the same plan and
  // then judged in order, charged as one after another would be: the same
  // changes, the same cost, in less time (ScanInOrder).
  std::vector<Candidate> slots = Slots();
  std::vector<uint8_t> made(slots.size(), 0);  // the move changes the plan
  bool stopped = false;
  const auto batch = [&] {
    if (OutOfBudget()) return false;
    stopped = options_.stop != nullptr && options_.stop->Stop();
    if (!stopped) DeriveFor(plan);
    return !stopped;
  };
  const auto prepare = [&](size_t slot, size_t i) {
    Candidate& c = slots[slot];
    c.replayed = false;
    made[slot] =
        MakeCandidate(moves[i], plan, swapped, cap, c.plan, c.swapped, c.need);
    // (One that would replay as the plan, or known to fail, is not
    // replayed; whether it is charged is decided in order.)
    if (made[slot] && !ReplaysAsThePlan(plan, c.plan, moves[i].tensor) &&
        !KnownToFail(c.plan, moves[i].tensor, result)) {
      Prepare(c, replay, /*with_need=*/true, plan, replay);
    }
  };
  const auto judge = [&](size_t slot, size_t i) {
    Candidate& c = slots[slot];
    if (!made[slot]) return ScanVerdict::kNext;
    const int32_t t = moves[i].tensor;
    const int kind = MoveKind(plan.decisions[t], moves[i]);
    if (!c.replayed || KnownToFail(c.plan, t, result)) {
      ++tried_[kind];  // (as it would be, replayed)
      return ScanVerdict::kNext;
    }
    if (OutOfBudget()) return ScanVerdict::kStop;
    ++tried_[kind];
    const int64_t key = CandidateKey(c.plan, t);
    const int64_t next_swapped = c.swapped;
    if (!Judge(c, plan, replay, waited_)) {
      if (failed_changes_ != result.changes) {
        failed_.clear();
        failed_changes_ = result.changes;
      }
      failed_.insert(key);
      return ScanVerdict::kNext;
    }
    ++kept_[kind];
    ++result.changes;
    swapped = next_swapped;
    return OnTarget(replay) ? ScanVerdict::kStop : ScanVerdict::kChanged;
  };
  ScanInOrder(options_.workers, moves.size(), prepare, judge, batch);
  return !stopped;
}

bool Polisher::TryPairs(Plan& plan, SimulationResult& replay, int64_t& swapped,
                        int64_t cap, PolishResult& result) {
  // Every pair of tensors, each to another decision (swaps issued at their
  // need): affordable for small traces only.
  // Each tensor's options: every other decision (a swap at its need or as
  // early as it may be), and for a swap its issue point one op either way.
  auto options = [&](int32_t t) {
    std::vector<Move> out;
    const Decision d = plan.decisions[t];
    auto add = [&](Decision to, Issue issue) {
      if (Allowed(t, to)) out.push_back({t, to, issue});
    };
    if (d != Decision::kKeep) add(Decision::kKeep, Issue::kLatest);
    if (d != Decision::kRecompute) add(Decision::kRecompute, Issue::kLatest);
    if (d != Decision::kSwap) {
      add(Decision::kSwap, Issue::kLatest);
      add(Decision::kSwap, Issue::kEarliest);
    } else {
      add(Decision::kSwap, Issue::kEarlier);
      add(Decision::kSwap, Issue::kLater);
    }
    return out;
  };
  // Tensors that have options; pairs only where a quarter of the budget
  // left scans them all (small traces; all of it until stop 57, when a scan
  // that kept nothing took a fifth of a 42-tensor DAG's search): counted
  // without enumerating more than that.
  const int64_t budget = Left() / 4;
  std::vector<std::vector<Move>> each;
  int64_t pairs = 0, before = 0;
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    std::vector<Move> mine = options(t);
    if (trace_.tensors[t].size_bytes == 0 || mine.empty()) continue;
    pairs += static_cast<int64_t>(mine.size()) * before;
    before += static_cast<int64_t>(mine.size());
    if (pairs > budget) return false;
    each.push_back(std::move(mine));
  }
  std::vector<std::pair<Move, Move>> moves;
  moves.reserve(static_cast<size_t>(pairs));
  for (size_t i = 0; i < each.size(); ++i) {
    for (size_t j = i + 1; j < each.size(); ++j) {
      for (const Move& a : each[i]) {
        for (const Move& b : each[j]) moves.emplace_back(a, b);
      }
    }
  }
  std::vector<Candidate> slots = Slots();
  bool found = false;
  const auto batch = [&] {
    if (OutOfBudget() || (options_.stop != nullptr && options_.stop->Stop()))
      return false;
    DeriveFor(plan);
    return true;
  };
  const auto prepare = [&](size_t slot, size_t i) {
    Candidate& c = slots[slot];
    c.replayed = false;
    c.plan = Apply(Apply(plan, moves[i].first), moves[i].second);
    if (c.plan.decisions == plan.decisions &&
        c.plan.prefetch_issue_op == plan.prefetch_issue_op) {
      return;
    }
    c.swapped = SwappedBytes(trace_, c.plan);
    if (c.swapped <= cap) Prepare(c, replay, /*with_need=*/false, plan, replay);
  };
  const auto judge = [&](size_t slot, size_t) {
    Candidate& c = slots[slot];
    if (!c.replayed) return ScanVerdict::kNext;
    if (OutOfBudget()) return ScanVerdict::kStop;
    const int64_t next_swapped = c.swapped;
    if (!Judge(c, plan, replay, waited_)) return ScanVerdict::kNext;
    swapped = next_swapped;
    ++result.changes;
    found = true;
    return ScanVerdict::kStop;
  };
  ScanInOrder(options_.workers, moves.size(), prepare, judge, batch);
  return found;
}

bool Polisher::TradeScan(Plan& plan, SimulationResult& replay,
                         PolishResult& result, bool link) {
  // Memory trades pair every kept tensor with every rebuilt one: built only
  // where that costs less than the replays left.
  int64_t kept = 0, rebuilt = 0;
  for (const Decision d : plan.decisions) {
    kept += d == Decision::kKeep;
    rebuilt += d == Decision::kRecompute;
  }
  if (!link && kept * rebuilt > Left() * ReplayElements(trace_)) return false;
  bool kept_one = false;
  const std::vector<Trade> trades =
      Trades(trace_, plan,
             {!link, link && options_.allow_swap && options_.link_trades,
              link && options_.room_trades, sim_.budget_bytes,
              &transfer_times_.h2d_ns});
  std::vector<Candidate> slots = Slots();
  // ChainsFit's marks, a set per slot.
  std::vector<std::vector<uint32_t>> stamps(
      slots.size(), std::vector<uint32_t>(trace_.tensors.size(), 0));
  std::vector<uint32_t> walks(slots.size(), 0);
  const auto batch = [&] {
    if (OutOfBudget() || OnTarget(replay) ||
        (options_.stop != nullptr && options_.stop->Stop())) {
      return false;
    }
    DeriveFor(plan);
    return true;
  };
  const auto prepare = [&](size_t slot, size_t i) {
    Candidate& c = slots[slot];
    c.replayed = false;
    const Trade& trade = trades[i];
    Plan next = plan;
    if (!MakeTrade(trace_, plan, trade, kMaxRebuildChain, stamps[slot],
                   walks[slot], next)) {
      return;
    }
    // (A new swap's issue point: the earliest of its window.)
    c.plan = Apply(next, {trade.tensor, trade.to,
                          trade.to == Decision::kSwap ? Issue::kEarliest
                                                      : Issue::kLatest});
    Prepare(c, replay, /*with_need=*/false, plan, replay);
  };
  const auto judge = [&](size_t slot, size_t) {
    Candidate& c = slots[slot];
    if (!c.replayed) return ScanVerdict::kNext;
    if (OutOfBudget() || OnTarget(replay)) return ScanVerdict::kStop;
    if (!Judge(c, plan, replay, waited_)) return ScanVerdict::kNext;
    ++result.changes;
    kept_one = true;
    return ScanVerdict::kChanged;
  };
  ScanInOrder(options_.workers, trades.size(), prepare, judge, batch);
  return kept_one;
}

}  // namespace

PolishResult Polish(const Trace& trace, const Hardware& hardware,
                    int64_t budget_bytes, const PolishOptions& options,
                    Plan& plan, SimulationResult& replay) {
  Polisher polisher(trace, hardware, budget_bytes, options);
  PolishResult result = polisher.Run(plan, replay);
  result.replays = polisher.Spent();
  return result;
}

}  // namespace slackswap
