// The improvement step's trades (planner/polish.h): a kept tensor rebuilt
// instead while rebuilt tensors inside its span are kept, a change no single
// change and no affordable pair scan can make.
#include "planner/polish.h"

#include <cstdint>
#include <vector>

#include "gtest/gtest.h"
#include "planner/replay_cost.h"
#include "simulator/event_model.h"
#include "simulator/hardware.h"
#include "simulator/schedule.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"
#include "tests/planner/medium_cases.h"

namespace slackswap {
namespace {

constexpr int32_t kBig = 0;     // 4 MB, cheap to rebuild, live ops 0-7
constexpr int32_t kSmall = 1;   // 1 MB, dear to rebuild, live ops 1-6
constexpr int32_t kPinned = 2;  // 2 MB, neither swapped nor rebuilt, ops 3-4
constexpr int32_t kFillers = 40;
constexpr int64_t kMb = 1'000'000;
constexpr int64_t kCheap = 100;
constexpr int64_t kDear = 100'000;

// Four forward and four backward ops. At op 3 every tensor is resident when
// all are kept: 7 MB and the fillers' bytes, over the 6.5 MB budget; the
// small tensor's span (after op 2, before op 6) lies within the big one's
// (after op 1, before op 7). Swaps are forbidden: the link plays no part.
// The fillers (a byte each, kept, rebuilt for 1 us) make the pair scan too
// dear for the budget below.
TraceSpec TradeTrace() {
  TraceSpec t;
  t.name = "trade";
  for (int i = 0; i < 8; ++i) {
    OperatorSpec& op = t.operators.emplace_back();
    op.phase = i < 4 ? Phase::kForward : Phase::kBackward;
    op.duration_ns = i < 4 ? 1000 : 2000;
  }
  const auto add = [&](int64_t bytes, int32_t producer,
                       std::vector<int32_t> uses, int64_t rebuild_ns) {
    TensorSpec& x = t.tensors.emplace_back();
    x.size_bytes = bytes;
    x.producer_op = producer;
    x.use_ops = std::move(uses);
    x.recompute_duration_ns = rebuild_ns;
    x.swap_forbidden = true;
    return &x;
  };
  add(4 * kMb, 0, {1, 7}, kCheap);
  add(kMb, 1, {2, 6}, kDear);
  add(2 * kMb, 3, {4}, 1000)->recompute_forbidden = true;
  for (int i = 0; i < kFillers; ++i) add(1, 0, {7}, 1000);
  return t;
}

Hardware TradeHardware() {
  Hardware h;
  h.name = "trade";
  h.d2h_bytes_per_second = 10'000'000'000;
  h.h2d_bytes_per_second = 10'000'000'000;
  h.matmul_flops_per_second = 1'000'000'000'000;
  h.hbm_bytes_per_second = 1'000'000'000'000;
  return h;
}

// The trade trace on its hardware at the trade tests' 6.5 MB budget.
struct TradeCase {
  Trace trace;
  Hardware hardware;
  int64_t budget = 0;
  SimulationOptions sim;
};
TradeCase MakeTradeCase() {
  TradeCase c{
      *ValidateTrace(TradeTrace()), TradeHardware(), 6 * kMb + kMb / 2, {}};
  c.sim.budget_bytes = c.budget;
  return c;
}

// A medium DAG near its floor and SlackSwap's passes' plan (repaired, not
// improved): a start the improvement step changes many times.
struct Start {
  testing::MediumCase c;
  Plan plan;
  SimulationResult replay;
};
Start DagStart(uint64_t seed, int32_t max_tensors, int64_t percent) {
  Start s{
      testing::MakeMediumCase(MediumShape::kDag, seed, max_tensors, percent),
      {},
      {}};
  const PlanningResult passes = testing::PassesPlan(s.c, /*polish=*/false);
  s.plan = passes.plan;
  s.replay = passes.replay;
  s.replay.timeline.clear();
  return s;
}

bool SamePlan(const Plan& a, const Plan& b) {
  return a.decisions == b.decisions &&
         a.prefetch_issue_op == b.prefetch_issue_op;
}

// The local search with and without one of its skips (`skip`) on a 59-tensor
// DAG near its floor: the same changes and plan, converged, for strictly
// fewer replays with it. (`earliest_issue` as PolishOptions'.)
void ExpectSameChangesForFewerReplays(bool PolishOptions::*skip,
                                      bool earliest_issue = true) {
  Start skipping = DagStart(10, 60, 10);
  Start again = DagStart(10, 60, 10);
  ASSERT_TRUE(skipping.replay.feasible);
  PolishOptions options;
  options.earliest_issue = earliest_issue;
  options.max_replays = 600;  // first improvements: 4 x the moves is more
  const PolishResult skipped =
      Polish(skipping.c.trace, skipping.c.hardware, skipping.c.budget, options,
             skipping.plan, skipping.replay);
  options.*skip = false;
  const PolishResult replayed =
      Polish(again.c.trace, again.c.hardware, again.c.budget, options,
             again.plan, again.replay);
  EXPECT_GE(skipped.changes, 2);
  EXPECT_EQ(skipped.changes, replayed.changes);
  EXPECT_TRUE(SamePlan(skipping.plan, again.plan));
  EXPECT_EQ(skipping.replay.iteration_ns, again.replay.iteration_ns);
  EXPECT_TRUE(skipped.converged);
  EXPECT_TRUE(replayed.converged);
  EXPECT_LT(skipped.replays, replayed.replays);
}

// A candidate the search has replayed against the plan as it is and not
// kept is not replayed again (a move after the last change of a scan, tried
// again at the start of the next; two moves that make the same plan): the
// same changes, for fewer replays.
TEST(PolishTest, ACandidateKnownToFailIsNotReplayedAgain) {
  ExpectSameChangesForFewerReplays(&PolishOptions::skip_known_failures);
}

// SimulationOptions::issue_waited marks each prefetch found before its
// issue point; one never marked starts at the same moment with any earlier
// issue point, so issuing it as early as it may be gives the same replay.
TEST(PolishTest, AnUnmarkedPrefetchIssuedEarlierReplaysTheSame) {
  Start s = DagStart(10, 60, 10);
  ASSERT_TRUE(s.replay.feasible);
  const Trace& trace = s.c.trace;
  // Every prefetch issued at its need, and half of them as early as they
  // may be: some then wait for their issue point, some never do.
  const std::vector<int32_t> need = DeriveNeeds(trace, s.plan.decisions);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (s.plan.decisions[t] != Decision::kSwap) continue;
    s.plan.prefetch_issue_op[t] =
        t % 2 == 0 ? need[t] : trace.tensors[t].last_forward_use + 1;
  }
  SimulationOptions sim;
  sim.budget_bytes = s.c.budget;
  std::vector<uint8_t> waited(trace.tensors.size(), 0);
  sim.issue_waited = &waited;
  const SimulationResult base = *Simulate(trace, s.c.hardware, s.plan, sim);
  ASSERT_TRUE(base.feasible);
  sim.issue_waited = nullptr;
  int32_t unmarked = 0, marked_changed = 0;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const int32_t earliest = trace.tensors[t].last_forward_use + 1;
    if (s.plan.decisions[t] != Decision::kSwap ||
        s.plan.prefetch_issue_op[t] <= earliest) {
      continue;
    }
    Plan early = s.plan;
    early.prefetch_issue_op[t] = earliest;
    const SimulationResult r = *Simulate(trace, s.c.hardware, early, sim);
    if (waited[t] == 0) {
      ++unmarked;
      EXPECT_EQ(r.iteration_ns, base.iteration_ns) << "tensor " << t;
      EXPECT_EQ(r.peak_resident_bytes, base.peak_resident_bytes);
      EXPECT_EQ(r.prefetch_wait_ns, base.prefetch_wait_ns);
    } else if (r.iteration_ns != base.iteration_ns) {
      ++marked_changed;
    }
  }
  EXPECT_GE(unmarked, 1);
  EXPECT_GE(marked_changed, 1);
}

// Such a move is then not replayed in the local search: the same changes,
// for fewer replays.
// (Where every swap is issued at the earliest, no move changes an issue
// point: the skip serves where EarliestIssueIsBest does not hold.)
TEST(PolishTest, AMoveThatReplaysAsThePlanIsNotReplayed) {
  ExpectSameChangesForFewerReplays(&PolishOptions::skip_same_replays,
                                   /*earliest_issue=*/false);
}

// A search with a focus changes the decisions of the tensors in it alone,
// and converges once a scan of their moves keeps nothing: from the passes'
// plan it improves the plan within the focus, and the unfocused search from
// that plan still finds changes outside it.
TEST(PolishTest, AFocusedSearchChangesOnlyTheTensorsInItsFocus) {
  Start s = DagStart(10, 60, 10);
  ASSERT_TRUE(s.replay.feasible);
  const int32_t n = s.c.trace.num_tensors();
  PolishOptions options;
  options.max_replays = 600;
  options.focus.assign(n, false);
  for (int32_t t = 20; t < 36; ++t) options.focus[t] = true;
  const Plan start = s.plan;
  const int64_t start_ns = s.replay.iteration_ns;
  const PolishResult focused =
      Polish(s.c.trace, s.c.hardware, s.c.budget, options, s.plan, s.replay);
  EXPECT_GE(focused.changes, 1);
  EXPECT_TRUE(focused.converged);
  EXPECT_LT(s.replay.iteration_ns, start_ns);
  int32_t changed = 0;
  for (int32_t t = 0; t < n; ++t) {
    if (s.plan.decisions[t] == start.decisions[t]) continue;
    EXPECT_TRUE(options.focus[t]) << "tensor " << t;
    ++changed;
  }
  EXPECT_GE(changed, 1);
  const Plan local = s.plan;
  options.focus.clear();
  const PolishResult everywhere =
      Polish(s.c.trace, s.c.hardware, s.c.budget, options, s.plan, s.replay);
  EXPECT_GE(everywhere.changes, 1);
  bool outside = false;
  for (int32_t t = 0; t < n; ++t) {
    if (t >= 20 && t < 36) continue;
    outside = outside || s.plan.decisions[t] != local.decisions[t];
  }
  EXPECT_TRUE(outside);
}

// Where EarliestIssueIsBest holds, a completed plan's swaps go to the
// earliest points of their windows and only decisions move from there: the
// search converges with every swap there, for fewer replays than with
// issue points moving, which leaves swaps elsewhere. Where it does not hold
// (the fits-now rule), the issue points move as before.
TEST(PolishTest, WhereEarlierIsNeverSlowerSwapsAreIssuedAtTheEarliest) {
  PolishOptions options;
  options.max_replays = 2000;
  Start on = DagStart(10, 60, 10);
  const PolishResult with = Polish(on.c.trace, on.c.hardware, on.c.budget,
                                   options, on.plan, on.replay);
  Start off = DagStart(10, 60, 10);
  options.earliest_issue = false;
  const PolishResult without = Polish(off.c.trace, off.c.hardware, off.c.budget,
                                      options, off.plan, off.replay);
  ASSERT_TRUE(with.converged);
  ASSERT_TRUE(without.converged);
  EXPECT_GE(with.changes, 2);
  EXPECT_TRUE(SamePlan(on.plan, IssuedAtEarliest(on.c.trace, on.plan)));
  EXPECT_FALSE(SamePlan(off.plan, IssuedAtEarliest(off.c.trace, off.plan)));
  EXPECT_LT(with.replays, without.replays);
  SimulationOptions sim;
  sim.budget_bytes = on.c.budget;
  EXPECT_EQ(Simulate(on.c.trace, on.c.hardware, on.plan, sim)->iteration_ns,
            on.replay.iteration_ns);

  Start fits = DagStart(10, 60, 10);
  options.earliest_issue = true;
  options.prefetch_admission = PrefetchAdmission::kFitsNow;
  Polish(fits.c.trace, fits.c.hardware, fits.c.budget, options, fits.plan,
         fits.replay);
  EXPECT_FALSE(SamePlan(fits.plan, IssuedAtEarliest(fits.c.trace, fits.plan)));
}

// Converged means a local optimum: another search from its plan, with no
// more replays, keeps nothing (the anytime search does not run it). A
// search that ran out of budget has not converged.
TEST(PolishTest, FromALocalOptimumAnotherSearchKeepsNothing) {
  Start s = DagStart(10, 60, 10);
  PolishOptions options;
  options.max_replays = 600;
  const PolishResult first =
      Polish(s.c.trace, s.c.hardware, s.c.budget, options, s.plan, s.replay);
  ASSERT_TRUE(first.converged);
  ASSERT_GE(first.changes, 1);
  const Plan optimum = s.plan;
  const int64_t optimum_ns = s.replay.iteration_ns;
  options.max_replays = 600 - first.replays;
  const PolishResult second =
      Polish(s.c.trace, s.c.hardware, s.c.budget, options, s.plan, s.replay);
  EXPECT_EQ(second.changes, 0);
  EXPECT_TRUE(second.converged);
  EXPECT_GT(second.replays, 0);
  EXPECT_TRUE(SamePlan(s.plan, optimum));
  EXPECT_EQ(s.replay.iteration_ns, optimum_ns);

  Start cut = DagStart(3, 60, 10);
  options.max_replays = 300;
  const PolishResult spent = Polish(cut.c.trace, cut.c.hardware, cut.c.budget,
                                    options, cut.plan, cut.replay);
  EXPECT_GE(spent.changes, 1);
  // It stopped once the dearest replay (MaxReplayMillis) would not fit: its
  // budget spent to within that, and never over it.
  EXPECT_LE(spent.replays, options.max_replays);
  EXPECT_GE(spent.replays * kReplayMillis,
            options.max_replays * kReplayMillis -
                MaxReplayMillis(cut.c.trace, cut.c.hardware, options.physics));
  EXPECT_FALSE(spent.converged);
}

TEST(PolishTest, TradesAKeptTensorForTheDearRebuildsInsideItsSpan) {
  const auto [trace, hardware, budget, sim] = MakeTradeCase();

  // The start: the big tensor kept, the small one rebuilt.
  Plan plan = Plan::AllKeep(trace);
  plan.decisions[kSmall] = Decision::kRecompute;
  SimulationResult replay = *Simulate(trace, hardware, plan, sim);
  ASSERT_TRUE(replay.feasible) << replay.infeasibility.reason;
  ASSERT_EQ(replay.iteration_ns, trace.ideal_ns + kDear);
  // No single change improves it: keeping the small one too passes the
  // budget at op 3, rebuilding the big one too only adds time.
  Plan both_kept = plan;
  both_kept.decisions[kSmall] = Decision::kKeep;
  EXPECT_FALSE(Simulate(trace, hardware, both_kept, sim)->feasible);
  Plan both_rebuilt = plan;
  both_rebuilt.decisions[kBig] = Decision::kRecompute;
  EXPECT_GT(Simulate(trace, hardware, both_rebuilt, sim)->iteration_ns,
            replay.iteration_ns);

  PolishOptions options;
  options.max_replays = 200;  // under the 861 pairs of the 42 tensors
  const PolishResult result =
      Polish(trace, hardware, budget, options, plan, replay);
  EXPECT_EQ(plan.decisions[kBig], Decision::kRecompute);
  EXPECT_EQ(plan.decisions[kSmall], Decision::kKeep);
  EXPECT_EQ(plan.decisions[kPinned], Decision::kKeep);
  for (int32_t t = 3; t < trace.num_tensors(); ++t) {
    EXPECT_EQ(plan.decisions[t], Decision::kKeep) << t;
  }
  EXPECT_GE(result.changes, 1);
  EXPECT_LE(result.replays, options.max_replays);
  // The plan replays as the step says: the cheap rebuild only.
  const SimulationResult check = *Simulate(trace, hardware, plan, sim);
  ASSERT_TRUE(check.feasible) << check.infeasibility.reason;
  EXPECT_EQ(check.iteration_ns, trace.ideal_ns + kCheap);
  EXPECT_EQ(replay.iteration_ns, check.iteration_ns);
}

// With trades_only (the anytime search's kicks) the search makes the
// trades and no single change: from the start above, the trade; from the
// plan that rebuilds both, where keeping the small one alone is faster (a
// single change, no trade), nothing, where the whole search keeps it.
TEST(PolishTest, TradesOnlyMakesTheTradesAndNoSingleChange) {
  const auto [trace, hardware, budget, sim] = MakeTradeCase();
  PolishOptions options;
  options.max_replays = 200;
  options.trades_only = true;

  Plan plan = Plan::AllKeep(trace);
  plan.decisions[kSmall] = Decision::kRecompute;
  SimulationResult replay = *Simulate(trace, hardware, plan, sim);
  const PolishResult traded =
      Polish(trace, hardware, budget, options, plan, replay);
  EXPECT_EQ(traded.changes, 1);
  EXPECT_FALSE(traded.converged);
  EXPECT_LE(traded.replays, options.max_replays);
  EXPECT_EQ(plan.decisions[kBig], Decision::kRecompute);
  EXPECT_EQ(plan.decisions[kSmall], Decision::kKeep);
  EXPECT_EQ(replay.iteration_ns, trace.ideal_ns + kCheap);

  Plan both = Plan::AllKeep(trace);
  both.decisions[kBig] = Decision::kRecompute;
  both.decisions[kSmall] = Decision::kRecompute;
  const SimulationResult both_replay = *Simulate(trace, hardware, both, sim);
  ASSERT_TRUE(both_replay.feasible);
  Plan only = both;
  SimulationResult only_replay = both_replay;
  EXPECT_EQ(Polish(trace, hardware, budget, options, only, only_replay).changes,
            0);
  EXPECT_EQ(only.decisions, both.decisions);
  EXPECT_EQ(only_replay.iteration_ns, both_replay.iteration_ns);
  options.trades_only = false;
  Plan whole = both;
  SimulationResult whole_replay = both_replay;
  EXPECT_GE(
      Polish(trace, hardware, budget, options, whole, whole_replay).changes, 1);
  EXPECT_EQ(whole.decisions[kSmall], Decision::kKeep);
  EXPECT_LT(whole_replay.iteration_ns, both_replay.iteration_ns);
}

// Once single changes and trades stall, the pairs are scanned only where a
// quarter of the budget left covers them all: 861 pairs of the 42 tensors
// above (one other decision each, the pinned tensor none). From the traded
// plan (where nothing improves it), with 2,000 replays they are skipped
// (15 replays spent); with 4,000 they are scanned (317: most are cut off
// early and cost less) and keep nothing. Until stop 57 the whole
// budget left counted: on a 42-tensor DAG at 2% a scan that kept nothing
// took a fifth of the search's budget.
TEST(PolishTest, PairsOnlyWhereAQuarterOfTheBudgetScansThem) {
  const TradeCase c = MakeTradeCase();  // (the lambda below reads it)
  Plan traded = Plan::AllKeep(c.trace);
  traded.decisions[kBig] = Decision::kRecompute;
  const SimulationResult start = *Simulate(c.trace, c.hardware, traded, c.sim);
  ASSERT_TRUE(start.feasible);
  ASSERT_EQ(start.iteration_ns, c.trace.ideal_ns + kCheap);
  const auto search = [&](int64_t replays) {
    PolishOptions options;
    options.max_replays = replays;
    Plan plan = traded;
    SimulationResult replay = start;
    const PolishResult r =
        Polish(c.trace, c.hardware, c.budget, options, plan, replay);
    EXPECT_EQ(r.changes, 0);
    EXPECT_TRUE(r.converged);
    EXPECT_EQ(plan.decisions, traded.decisions);
    return r.replays;
  };
  const int64_t skipped = search(2000);
  const int64_t scanned = search(4000);
  EXPECT_LT(skipped, 100) << scanned;
  EXPECT_GT(scanned, skipped + 200);  // (cut-off replays cost less)
}

}  // namespace
}  // namespace slackswap
