#include "planner/anytime.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "base/workers.h"
#include "planner/basic_plans.h"
#include "planner/exact_search.h"
#include "planner/genetic.h"
#include "planner/polish.h"
#include "planner/replay_cost.h"
#include "simulator/schedule.h"
#include "simulator/splitmix.h"

namespace slackswap {
namespace {

// The kicks of step 4: each sets 2 to kKickChanges tensors within
// kKickRadius (in tensor order) of a tensor drawn at random to other
// decisions, and the local search that follows moves only the tensors
// within kFocusRadius of it, with at most kKickReplays replays. (Measured
// on the held-out study's fast set, scripts/fast_set.sh and docs/planner.md:
// up to 6 changes with 200 replays each lost more; 50 or 400 replays, or a
// focus of 5 or 12, too.)
constexpr int32_t kKickChanges = 4;
constexpr int32_t kKickRadius = 3;
constexpr int32_t kFocusRadius = 8;
constexpr int64_t kKickReplays = 100;
// Of the kicks, this many in a hundred exchange decisions instead: 1 to
// kExchanges times, a tensor within kKickRadius of the one drawn takes
// another decision d and one within kFocusRadius that had d takes its old
// one. (Measured on the fast set as above, docs/planner.md: half of the
// kicks, 10 in 100, one exchange at most or a partner within 5 or 12 lost
// more; 15 in 100 lost less but left a pair of budgets of
// tests/planner/budget_monotonicity_test.cc beyond the gap target.)
constexpr int kExchangePercent = 25;
constexpr int64_t kExchanges = 2;

// The genetic search stops after this many generations without a better
// plan, or a third of the generations its budget allows if more: on small
// traces the bound is often loose, and the search would otherwise spend its
// whole budget where it can find nothing better; on larger ones, what a
// stalled round would spend does more in the local search and the kicks
// after it. (Measured on the held-out study's fast set with step 2's round
// at kGeneticShareTwelfths, docs/planner.md: 20 and 40 lost more than 30; 60,
// kept until then, more still.)
constexpr int32_t kStallGenerations = 30;
constexpr int32_t kPopulation = 48;
// Step 2's round spends this many twelfths of what is left once a plan
// completes (the fast set as above: 6 and 9 lost more than 7; 8, two
// thirds, kept until then, more too).
constexpr int64_t kGeneticShareTwelfths = 7;
// The seed of the genetic round that runs first where no start completes
// (the later rounds draw from 1, 2, ...).
constexpr uint64_t kGeneticFirstSeed = 1000;
// The kicks' random draws (step 4).
constexpr uint64_t kKicksSeed = 2000;
// Step 1's local search from the plan gets this many sixteenths of the
// budget, and where it ends short of a local optimum with a plan that
// completes, goes on until a quarter of the budget is spent in all; the
// second start and the genetic rounds get the rest. (Until stop 57 it went
// on until no change improved the plan or the budget was spent: on medium
// traces near the floor it often spent the whole budget, or left too little
// for the second start; docs/planner.md, "Stop 57".)
constexpr int64_t kFirstSearchSixteenths = 3;
constexpr int64_t kStepOneSixteenths = 4;
// On traces of at most this many tensors the kicks wait for a second
// genetic round (step 4). On small ones a kick's local search may move
// every tensor; on medium ones (tens of tensors) the budget allows
// thousands of kicks that seldom improve the plan, where a second round
// does more (docs/planner.md, "Stop 57": until then 2 * kFocusRadius).
constexpr int32_t kTwoRoundsTensors = 100;

// a is a better replay than b: feasible first, then faster.
bool Faster(const SimulationResult& a, const SimulationResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.feasible && a.iteration_ns < b.iteration_ns;
}

bool OnTarget(const SimulationResult& r, int64_t target_ns) {
  return r.feasible && r.iteration_ns <= target_ns;
}

// The genetic search's starts besides the plan: the caller's, the all-keep
// plan, the plan that rebuilds everything it may (where the link is slow, a
// shared uplink, the best plans recompute nearly everything), and where
// their swaps fit the host's pinned memory and no barriers hold the
// prefetches, the all-swap plan and, last (`freeing_last`), FreeEverythingPlan.
std::vector<Plan> Portfolio(const Trace& trace, const Hardware& hardware,
                            const AnytimeOptions& options, bool& freeing_last) {
  std::vector<Plan> starts = options.extra_starts;
  starts.push_back(Plan::AllKeep(trace));
  Plan all_recompute = Plan::AllKeep(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (!trace.tensors[t].recompute_forbidden)
      all_recompute.decisions[t] = Decision::kRecompute;
  }
  starts.push_back(std::move(all_recompute));
  const auto pinned_fits = [&](const Plan& p) {
    return !options.per_layer_barriers &&
           (hardware.host_pinned_memory_bytes <= 0 ||
            SwappedBytes(trace, p) <= hardware.host_pinned_memory_bytes);
  };
  Plan all_swap = AllSwapPlan(trace);
  if (pinned_fits(all_swap)) starts.push_back(std::move(all_swap));
  Plan free_everything = FreeEverythingPlan(trace);
  freeing_last = pinned_fits(free_everything);
  if (freeing_last) starts.push_back(std::move(free_everything));
  return starts;
}

PolishOptions PolishFor(const AnytimeOptions& options, Workers& workers,
                        int64_t replays) {
  PolishOptions p;
  p.workers = &workers;
  p.max_replays = replays;
  p.per_layer_barriers = options.per_layer_barriers;
  p.stop = options.stop;
  p.target_ns = options.target_ns;
  p.physics = options.physics;
  p.adaptive_order = options.adaptive_order;
  p.earliest_issue = options.earliest_issue;
  p.link_trades = options.link_trades;
  p.room_trades = options.room_trades;
  return p;
}

// `plan`'s replay under the search's settings, without timeline.
SimulationResult Replay(const Trace& trace, const Hardware& hardware,
                        int64_t budget_bytes, const AnytimeOptions& options,
                        const Plan& plan) {
  SimulationOptions sim;
  sim.budget_bytes = budget_bytes;
  sim.per_layer_barriers = options.per_layer_barriers;
  sim.physics = options.physics;
  // (Its states, for the local search's candidates to resume from.)
  sim.record_resume_points = true;
  SimulationResult r =
      SimulateSchedule(trace, hardware, plan, DeriveSchedule(trace, plan), sim);
  r.timeline.clear();
  return r;
}

// Whether `replays` cover a genetic round's first generation (kPopulation
// replays, each at the most one may cost: MaxReplayMillis).
bool GenerationFits(const Trace& trace, const Hardware& hardware,
                    const AnytimeOptions& options, int64_t replays) {
  return replays * kReplayMillis >=
         kPopulation * MaxReplayMillis(trace, hardware, options.physics);
}

// A genetic round from `seeds` with `evaluations` replays.
GeneticResult GeneticRound(const Trace& trace, const Hardware& hardware,
                           int64_t budget_bytes, const AnytimeOptions& options,
                           Workers& workers, const std::vector<Plan>& seeds,
                           int64_t evaluations, uint64_t seed) {
  GeneticOptions genetic;
  genetic.max_evaluations = evaluations;
  genetic.population = kPopulation;
  genetic.seed = seed;
  genetic.workers = &workers;
  genetic.charge_partial_replays = true;
  genetic.per_layer_barriers = options.per_layer_barriers;
  genetic.target_ns = options.target_ns;
  genetic.physics = options.physics;
  genetic.earliest_issue = options.earliest_issue;
  genetic.stall_generations = static_cast<int32_t>(std::max<int64_t>(
      kStallGenerations, genetic.max_evaluations / kPopulation / 3));
  genetic.should_stop = [&] {
    return options.stop != nullptr && options.stop->StopNow();
  };
  return RunGenetic(trace, hardware, budget_bytes, seeds, genetic);
}

// A genetic round's seeds: the plan, then the portfolio of starts.
std::vector<Plan> Seeds(const Plan& plan, const std::vector<Plan>& starts) {
  std::vector<Plan> seeds = {plan};
  seeds.insert(seeds.end(), starts.begin(), starts.end());
  return seeds;
}

// Takes a genetic round's best plan and its replay (without timeline).
void Adopt(const GeneticResult& found, Plan& plan, SimulationResult& replay) {
  plan = found.best;
  replay = found.replay;
  replay.timeline.clear();
}

// The second start: the local search from the fastest start of the
// portfolio that completes, with `replays` (what the first took). Its plan
// takes that start's place in the portfolio; true where it beats `plan`,
// which it then replaces (`converged`: whether that search converged).
// Charges every replay to `spent`.
bool SecondStart(const Trace& trace, const Hardware& hardware,
                 int64_t budget_bytes, const AnytimeOptions& options,
                 Workers& workers, int64_t replays, std::vector<Plan>& starts,
                 Plan& plan, SimulationResult& replay, int64_t& spent,
                 bool& converged) {
  std::optional<size_t> fastest;
  SimulationResult start_replay;
  for (size_t i = 0; i < starts.size(); ++i) {
    SimulationResult r =
        Replay(trace, hardware, budget_bytes, options, starts[i]);
    ++spent;
    if (r.feasible &&
        (!fastest || r.iteration_ns < start_replay.iteration_ns)) {
      fastest = i;
      start_replay = std::move(r);
    }
  }
  if (!fastest) return false;
  Plan other = starts[*fastest];
  const PolishResult polished =
      Polish(trace, hardware, budget_bytes,
             PolishFor(options, workers, replays), other, start_replay);
  spent += polished.replays;
  const bool better = Faster(start_replay, replay);
  if (better) {
    std::swap(plan, other);
    std::swap(replay, start_replay);
    converged = polished.converged;
  }
  starts[*fastest] = std::move(other);
  return better;
}

// Step 0, where `replay` does not complete. True where the search ends
// there (on target, or stopped).
bool StepZero(const Trace& trace, const Hardware& hardware,
              int64_t budget_bytes, const AnytimeOptions& options,
              Workers& workers, bool freeing_last, std::vector<Plan>& starts,
              Plan& plan, SimulationResult& replay, AnytimeResult& result) {
  // The local search starts from the plan that frees everything (the
  // portfolio's last) where that one completes; the plan so far takes its
  // place in the portfolio.
  if (freeing_last) {
    SimulationResult r =
        Replay(trace, hardware, budget_bytes, options, starts.back());
    ++result.replays;
    if (r.feasible) {
      std::swap(plan, starts.back());
      replay = std::move(r);
      result.improved = true;
      return OnTarget(replay, options.target_ns);
    }
  }
  // Still none: first a genetic round from the plan and the portfolio, with
  // a quarter of the budget (as step 2's, ending on the target or when it
  // stalls), and the local search from its best plan. The local search from
  // a plan that does not complete spends its budget making it complete,
  // change by change, and converges late from a worse start.
  if (!options.genetic_first ||
      !GenerationFits(trace, hardware, options,
                      options.max_replays - result.replays)) {
    return false;
  }
  const GeneticResult found = GeneticRound(
      trace, hardware, budget_bytes, options, workers, Seeds(plan, starts),
      options.max_replays / 4, kGeneticFirstSeed);
  result.replays += found.evaluations;
  if (found.replay.feasible) {
    Adopt(found, plan, replay);
    result.improved = true;
    if (OnTarget(replay, options.target_ns)) return true;
  }
  return (options.stop != nullptr && options.stop->stopped()) || found.stopped;
}

// Step 1's exact stage (traces of at most kMaxExactTensors, without
// barriers): the branch and bound of exact_search.h from `plan`, with half of
// what is left; its best plan replaces `plan` where faster. True where the
// search was exhaustive: `plan` is then the optimum (or where it does not
// complete, no plan fits), and the search ends; false where it gave up or
// was stopped.
//
// It runs on one thread, where the rest of the search replays on two: its
// work is charged at kExactChargeFifths fifths (measured: an element of its
// replays takes 5.4 ns, of the rest of the search's 3.4 ns; docs/planner.md,
// "The exact stage").
constexpr int64_t kExactChargeFifths = 8;
bool ExactStage(const Trace& trace, const Hardware& hardware,
                int64_t budget_bytes, const AnytimeOptions& options, Plan& plan,
                SimulationResult& replay, AnytimeResult& result) {
  ExactSearchOptions exact;
  exact.max_cost_millis =
      std::max<int64_t>((options.max_replays - result.replays) / 2, 1) *
      kReplayMillis * 5 / kExactChargeFifths;
  exact.should_stop = [&] {
    return options.stop != nullptr && options.stop->StopNow();
  };
  exact.physics = options.physics;
  exact.earliest_issue = options.earliest_issue;
  const absl::StatusOr<ExactSearchResult> found =
      SearchExact(trace, hardware, budget_bytes, exact,
                  replay.feasible ? &plan : nullptr, &replay);
  if (!found.ok()) return false;  // stopped
  result.replays +=
      (found->cost_millis * kExactChargeFifths / 5 + kReplayMillis - 1) /
      kReplayMillis;
  if (found->found && Faster(found->replay, replay)) {
    plan = found->best;
    // (Again, recording the states the local search resumes from.)
    replay = Replay(trace, hardware, budget_bytes, options, plan);
    ++result.replays;
    result.improved = true;
  }
  result.exhaustive = found->finished;
  return found->finished;
}

// `plan` kicked: 2 to kKickChanges tensors near a random one get another
// decision, or (kExchangePercent of the kicks, where
// AnytimeOptions::exchange_kicks) 1 to kExchanges pairs near it exchange
// decisions (a change the host's pinned memory would not hold is skipped), new
// swaps prefetched at their need, every issue point back in its window
// (where AnytimeOptions::earliest_issue applies, every swap at the earliest
// point of its window).
// Sets `center` to the tensor drawn.
Plan Kicked(const Trace& trace, const Hardware& hardware,
            const AnytimeOptions& options,
            const std::vector<int32_t>& run_starts, const Plan& plan,
            SplitMix64& random, int32_t& center) {
  const int32_t n = trace.num_tensors();
  Plan next = plan;
  int64_t swapped = SwappedBytes(trace, plan);
  center = static_cast<int32_t>(random.Int(0, n - 1));
  const auto may_take = [&](int32_t t, Decision d) {
    const Tensor& tensor = trace.tensors[t];
    return !(d == Decision::kSwap && tensor.swap_forbidden) &&
           !(d == Decision::kRecompute && tensor.recompute_forbidden);
  };
  const auto pinned_holds = [&](int64_t swapped_bytes) {
    return hardware.host_pinned_memory_bytes <= 0 ||
           swapped_bytes <= hardware.host_pinned_memory_bytes;
  };
  // Tensor t's swapped bytes under decision d.
  const auto swap_bytes = [&](int32_t t, Decision d) {
    return d == Decision::kSwap ? trace.tensors[t].size_bytes : 0;
  };
  const auto near_center = [&](int32_t radius) {
    return static_cast<int32_t>(
        std::clamp<int64_t>(center + random.Int(-radius, radius), 0, n - 1));
  };
  // One of the two decisions other than t's.
  const auto other = [&](int32_t t) {
    return static_cast<Decision>(
        (static_cast<int>(next.decisions[t]) + random.Int(1, 2)) % 3);
  };
  if (options.exchange_kicks && random.Chance(kExchangePercent)) {
    const int64_t exchanges = random.Int(1, kExchanges);
    std::vector<int32_t> partners;
    for (int64_t i = 0; i < exchanges; ++i) {
      const int32_t t = near_center(kKickRadius);
      const Decision was = next.decisions[t];
      const Decision d = other(t);
      if (!may_take(t, d)) continue;
      partners.clear();
      for (int32_t u = std::max(0, center - kFocusRadius);
           u <= std::min(n - 1, center + kFocusRadius); ++u) {
        if (u != t && next.decisions[u] == d && may_take(u, was))
          partners.push_back(u);
      }
      if (partners.empty()) continue;
      const int32_t u = partners[static_cast<size_t>(
          random.Int(0, static_cast<int64_t>(partners.size()) - 1))];
      const int64_t after = swapped - swap_bytes(t, was) + swap_bytes(t, d) -
                            swap_bytes(u, d) + swap_bytes(u, was);
      if (!pinned_holds(after)) continue;
      swapped = after;
      next.decisions[t] = d;
      next.decisions[u] = was;
    }
  } else {
    const int64_t changes = random.Int(2, kKickChanges);
    for (int64_t i = 0; i < changes; ++i) {
      const int32_t t = near_center(kKickRadius);
      const Decision d = other(t);
      if (!may_take(t, d)) continue;
      const int64_t after =
          swapped - swap_bytes(t, next.decisions[t]) + swap_bytes(t, d);
      if (!pinned_holds(after)) continue;
      swapped = after;
      next.decisions[t] = d;
    }
  }
  const std::vector<int32_t> need = DeriveNeeds(trace, next.decisions);
  const bool earliest =
      options.earliest_issue &&
      EarliestIssueIsBest(options.physics, PrefetchAdmission::kAnySpeed);
  for (int32_t t = 0; t < n; ++t) {
    if (next.decisions[t] != Decision::kSwap) {
      next.prefetch_issue_op[t] = 0;
      continue;
    }
    const IssueWindow window = IssueWindowOf(
        trace, t, need[t], options.per_layer_barriers, run_starts);
    // A new swap is prefetched at its need, or every swap at the earliest
    // where that is never slower.
    next.prefetch_issue_op[t] =
        earliest ? window.earliest
                 : window.Clamp(plan.decisions[t] == Decision::kSwap
                                    ? next.prefetch_issue_op[t]
                                    : window.latest);
  }
  return next;
}

// After a kick that changed `plan`: the kick's local search moved the
// tensors near it alone, so the trades over the whole plan (which the change
// may have opened), each kept where faster. Returns what they spent.
int64_t TradesAfterKick(const Trace& trace, const Hardware& hardware,
                        int64_t budget_bytes, const AnytimeOptions& options,
                        Workers& workers, Plan& plan, SimulationResult& replay,
                        int64_t spent) {
  PolishOptions trades =
      PolishFor(options, workers, options.max_replays - spent);
  trades.trades_only = true;
  return Polish(trace, hardware, budget_bytes, trades, plan, replay).replays;
}

// Step 4: kicks from `plan` (which completes), each followed by the local
// search near the tensors it changed; a kicked plan that then beats `plan`
// replaces it. While the budget has a replay for the kick and one for the
// search after it; charges every replay to `spent`. Returns how many kicked
// plans replaced it.
//
// The kicks are drawn and read one after another, each from the plan as the
// ones before it left it. The next few (kKicksAheadPerThread per thread)
// are drawn ahead from the plan as it is and run at once, on the threads: the
// same kicks, results and charges as one after another (a kick rarely
// improves the plan; those drawn after one that did are drawn again, and
// stop early where they run beside it), in less time.
int64_t Kicks(const Trace& trace, const Hardware& hardware,
              int64_t budget_bytes, const AnytimeOptions& options,
              Workers& workers, Plan& plan, SimulationResult& replay,
              int64_t& spent) {
  const int32_t n = trace.num_tensors();
  if (n == 0) return 0;
  const std::vector<int32_t> run_starts = BlockRunStarts(trace);
  SplitMix64 random(kKicksSeed);
  int64_t kept = 0;
  // Kicks in a row that changed nothing (every tensor near the one drawn
  // has its decision fixed): after this many, no kick would.
  constexpr int32_t kMaxIdleKicks = 64;
  int32_t idle = 0;
  struct Kick {
    SplitMix64 before{0};  // the draws before it and after it
    SplitMix64 after{0};
    Plan plan;  // kicked, then searched
    int32_t center = 0;
    bool changes = false;
    int64_t replays = 0;  // its local search's budget
    SimulationResult replay;
    int64_t spent = 0;
  };
  // Eight a thread: the kicks' local searches differ in length, and a
  // thread done with a short one takes the next instead of waiting for the
  // other's; those after one that beats the plan stop as soon as it does, so
  // drawing many ahead wastes little (the 64 chain and 64 branched-block
  // cells of docs/results.md section 15, four runs of each alternated:
  // medians of the slowest plan 0.965x and of the sum 0.96x those with two
  // a thread, four and sixteen about the same; the same plans).
  constexpr size_t kKicksAheadPerThread = 8;
  const size_t ahead = static_cast<size_t>(std::max(workers.threads(), 1)) *
                       kKicksAheadPerThread;
  std::vector<Kick> kicks;
  for (bool done = false; !done;) {
    if (options.stop != nullptr && options.stop->StopNow()) break;
    // Drawn ahead as if none improved the plan and each spent all its
    // budget (a local search may spend less: see below).
    kicks.clear();
    SplitMix64 draws = random;
    int64_t left = options.max_replays - spent;
    for (int32_t idle_ahead = idle;
         kicks.size() < ahead && left > 1 && idle_ahead < kMaxIdleKicks;) {
      Kick& k = kicks.emplace_back();
      k.before = draws;
      k.plan =
          Kicked(trace, hardware, options, run_starts, plan, draws, k.center);
      k.after = draws;
      k.changes = k.plan.decisions != plan.decisions;
      idle_ahead = k.changes ? 0 : idle_ahead + 1;
      if (!k.changes) continue;
      k.replays = std::min(left - 1, kKickReplays);
      left -= 1 + k.replays;
    }
    if (kicks.empty()) break;
    // The first kick found to beat the plan: those after it will not be
    // read (see below), and stop.
    std::atomic<size_t> first_better{kicks.size()};
    workers.ForEach(kicks.size(), [&](size_t i) {
      Kick& k = kicks[i];
      if (!k.changes || first_better.load(std::memory_order_relaxed) < i) {
        k.replay.feasible = false;  // not replayed: never taken
        return;
      }
      k.replay = Replay(trace, hardware, budget_bytes, options, k.plan);
      PolishOptions local = PolishFor(options, workers, k.replays);
      // On this thread alone (a few moves per scan), stopped between kicks
      // or by an earlier kick that beats the plan.
      local.workers = nullptr;
      const StopFunction after_better = [&first_better, i] {
        return first_better.load(std::memory_order_relaxed) < i;
      };
      StopPoll stop(after_better, 1);
      local.stop = &stop;
      local.focus.assign(n, false);
      for (int32_t t = std::max(0, k.center - kFocusRadius);
           t <= std::min(n - 1, k.center + kFocusRadius); ++t) {
        local.focus[t] = true;
      }
      k.spent =
          1 + Polish(trace, hardware, budget_bytes, local, k.plan, k.replay)
                  .replays;
      if (stop.stopped() || !Faster(k.replay, replay)) return;
      size_t first = first_better.load(std::memory_order_relaxed);
      while (i < first && !first_better.compare_exchange_weak(
                              first, i, std::memory_order_relaxed)) {
      }
    });
    for (Kick& k : kicks) {
      const int64_t left_now = options.max_replays - spent;
      if (left_now <= 1 || idle >= kMaxIdleKicks) {
        done = true;
        break;
      }
      if (k.changes && std::min(left_now - 1, kKickReplays) != k.replays) {
        random = k.before;  // its search's budget is another: again
        break;
      }
      random = k.after;
      if (!k.changes) {
        ++idle;
        continue;
      }
      idle = 0;
      spent += k.spent;
      if (!Faster(k.replay, replay)) continue;
      plan = std::move(k.plan);
      replay = std::move(k.replay);
      ++kept;
      if (!OnTarget(replay, options.target_ns) && options.kick_trades) {
        spent += TradesAfterKick(trace, hardware, budget_bytes, options,
                                 workers, plan, replay, spent);
      }
      done = OnTarget(replay, options.target_ns);
      break;  // the kicks after it were drawn from the plan before
    }
  }
  return kept;
}

}  // namespace

int64_t AnytimeReplays(const Trace& trace, const PlannerOptions& options) {
  if (options.search_time_ms <= 0) return 0;
  const double work =
      options.search_time_ms * static_cast<double>(kSearchWorkPerMs);
  const double replays =
      work / static_cast<double>(std::max<int64_t>(NominalReplayWork(trace),
                                                   kMinNominalReplayWork));
  // Fewer replays than a generation or two of the genetic search find
  // nothing: a trace that large is not searched.
  if (replays < kMinSearchReplays) return 0;
  return std::min<int64_t>(static_cast<int64_t>(replays), 1 << 22);
}

AnytimeResult SearchAnytime(const Trace& trace, const Hardware& hardware,
                            int64_t budget_bytes, const AnytimeOptions& options,
                            Plan& plan, SimulationResult& replay) {
  AnytimeResult result;
  if (OnTarget(replay, options.target_ns) || options.max_replays <= 0) {
    return result;
  }
  const auto stopped = [&] {
    return options.stop != nullptr && options.stop->stopped();
  };
  std::optional<Workers> own;
  if (options.workers == nullptr) own.emplace(options.threads);
  Workers& workers = options.workers != nullptr ? *options.workers : *own;
  // Whether the local search converged at `plan`: another from it would
  // replay a whole scan to keep nothing (unless more replays afford the
  // pairs: small traces), and is not run (docs/planner.md).
  bool converged = false;
  const auto polish = [&](int64_t replays) -> int64_t {
    if (converged) return 0;
    const SimulationResult before = replay;
    const PolishResult r =
        Polish(trace, hardware, budget_bytes,
               PolishFor(options, workers, replays), plan, replay);
    result.replays += r.replays;
    converged = r.converged;
    if (Faster(replay, before)) result.improved = true;
    return r.replays;
  };

  // The exact stage (small traces): first where the plan does not complete
  // (only an exhaustive search says no plan fits), else after the local
  // search (its plan cuts the tree sooner); where it gave up, on from it.
  bool exact = options.exact_stage && !options.per_layer_barriers &&
               trace.num_tensors() <= kMaxExactTensors;
  const auto exact_stage = [&] {
    exact = false;
    const SimulationResult before = replay;
    if (ExactStage(trace, hardware, budget_bytes, options, plan, replay,
                   result) ||
        OnTarget(replay, options.target_ns) || stopped()) {
      return true;
    }
    if (Faster(replay, before)) converged = false;
    return false;
  };
  if (exact && !replay.feasible && exact_stage()) return result;

  bool freeing_last = false;
  std::vector<Plan> starts = Portfolio(trace, hardware, options, freeing_last);
  if (!replay.feasible &&
      StepZero(trace, hardware, budget_bytes, options, workers, freeing_last,
               starts, plan, replay, result)) {
    return result;
  }

  // 1. Local search from the plan: kFirstSearchSixteenths of the budget;
  // where its plan completes, on to kStepOneSixteenths (unless converged).
  const int64_t first_share = options.max_replays * kFirstSearchSixteenths;
  result.step_one_replays = polish(first_share / 16);
  if (OnTarget(replay, options.target_ns) || stopped()) return result;
  const int64_t step_one = options.max_replays * kStepOneSixteenths / 16;
  if (replay.feasible && result.replays < step_one)
    result.step_one_replays += polish(step_one - result.replays);
  // Where it does not, on with all that is left before any round (whose
  // plans complete no sooner: docs/planner.md, "Stop 58").
  if (!replay.feasible && options.search_until_complete)
    polish(options.max_replays - result.replays);
  if (OnTarget(replay, options.target_ns) || stopped()) return result;
  if (exact && exact_stage()) return result;
  // A local search stays in its start's basin: where the budget has room
  // for it twice more, one from a second start.
  const int64_t first = result.replays;
  if (replay.feasible && options.second_start &&
      options.max_replays - first > 2 * first) {
    if (SecondStart(trace, hardware, budget_bytes, options, workers, first,
                    starts, plan, replay, result.replays, converged))
      result.improved = true;
    if (OnTarget(replay, options.target_ns) || stopped()) return result;
  }

  // 2. Rounds of a genetic search from the portfolio of starts, each from its
  // own seed and followed by the local search from the best plan, while a
  // generation's worth of replays is left.
  for (uint64_t round = 1;; ++round) {
    const int64_t left = options.max_replays - result.replays;
    if (!GenerationFits(trace, hardware, options, left)) break;
    const std::vector<Plan> seeds = Seeds(plan, starts);
    // 7/12 of what is left (kGeneticShareTwelfths); a third while no plan
    // completes: the round's job is then to find one, and the local search
    // from it needs the rest to converge.
    const int64_t evaluations = std::max<int64_t>(
        replay.feasible ? left * kGeneticShareTwelfths / 12 : left / 3,
        static_cast<int64_t>(seeds.size()) * 2);
    const GeneticResult found =
        GeneticRound(trace, hardware, budget_bytes, options, workers, seeds,
                     evaluations, round);
    result.replays += found.evaluations;
    if (Faster(found.replay, replay)) {
      Adopt(found, plan, replay);
      result.improved = true;
      converged = false;
    }
    if (OnTarget(replay, options.target_ns) || stopped() || found.stopped) {
      break;
    }
    // 3. Local search from the best plan found, with what is left.
    polish(std::max<int64_t>(options.max_replays - result.replays, 0));
    if (OnTarget(replay, options.target_ns) || stopped()) break;
    // 4. Once the plan completes, kicks with all that is left instead of
    // more rounds: from round 1, or 2 on traces of kTwoRoundsTensors at most.
    if (options.kicks && replay.feasible &&
        round >= (trace.num_tensors() <= kTwoRoundsTensors ? 2u : 1u)) {
      result.kicks_kept = Kicks(trace, hardware, budget_bytes, options, workers,
                                plan, replay, result.replays);
      if (result.kicks_kept > 0) result.improved = true;
      break;
    }
  }
  return result;
}

}  // namespace slackswap
