#include "planner/anytime.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "base/workers.h"
#include "planner/basic_plans.h"
#include "planner/genetic.h"
#include "planner/polish.h"
#include "planner/replay_cost.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

// The genetic search stops after this many generations without a better
// plan, or a third of the generations its budget allows if more: on small
// traces the bound is often loose, and the search would otherwise spend its
// whole budget where it can find nothing better.
constexpr int32_t kStallGenerations = 60;
constexpr int32_t kPopulation = 48;
// The seed of the genetic round that runs first where no start completes
// (the later rounds draw from 1, 2, ...).
constexpr uint64_t kGeneticFirstSeed = 1000;

// a is a better replay than b: feasible first, then faster.
bool Faster(const SimulationResult& a, const SimulationResult& b) {
  if (a.feasible != b.feasible) return a.feasible;
  return a.feasible && a.iteration_ns < b.iteration_ns;
}

bool OnTarget(const SimulationResult& r, int64_t target_ns) {
  return r.feasible && r.iteration_ns <= target_ns;
}

// The plan that frees every tensor it can right after its last forward use:
// swapped where it may be, else rebuilt where it may be (prefetches issued
// at the first backward op, the admission rule holding them for memory).
// Near the proven floor often the only plan that completes, where the
// all-swap plan keeps the tensors it may not swap and the all-rebuild plan
// holds whole chains at once.
Plan FreeEverything(const Trace& trace) {
  Plan plan = Plan::AllKeep(trace);
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& tensor = trace.tensors[t];
    if (!tensor.swap_forbidden) {
      plan.decisions[t] = Decision::kSwap;
      plan.prefetch_issue_op[t] =
          std::max(trace.first_backward_op(), tensor.last_forward_use + 1);
    } else if (!tensor.recompute_forbidden) {
      plan.decisions[t] = Decision::kRecompute;
    }
  }
  return plan;
}

int64_t SwappedBytes(const Trace& trace, const Plan& plan) {
  int64_t swapped = 0;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] == Decision::kSwap)
      swapped += trace.tensors[t].size_bytes;
  }
  return swapped;
}

// The genetic search's starts besides the plan: the caller's, the all-keep
// plan, the plan that rebuilds everything it may (where the link is slow, a
// shared uplink, the best plans recompute nearly everything), and where
// their swaps fit the host's pinned memory and no barriers hold the
// prefetches, the all-swap plan and, last (`freeing_last`), FreeEverything.
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
  Plan free_everything = FreeEverything(trace);
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
  SimulationResult r =
      SimulateSchedule(trace, hardware, plan, DeriveSchedule(trace, plan), sim);
  r.timeline.clear();
  return r;
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

}  // namespace

int64_t AnytimeReplays(const Trace& trace, const PlannerOptions& options) {
  if (options.search_time_ms <= 0) return 0;
  const int64_t elements = ReplayElements(trace);
  const double work =
      options.search_time_ms * static_cast<double>(kSearchWorkPerMs);
  const double replays =
      work / static_cast<double>(std::max<int64_t>(elements, 1));
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
  // Whether the local search converged at `plan`. Another from the plan
  // would replay a whole scan to keep nothing, unless more replays than it
  // had left afford the pairs (small traces): it is not run; those replays
  // go to the genetic rounds instead (docs/planner.md).
  bool converged = false;
  const auto polish = [&](int64_t replays) {
    if (converged) return;
    const SimulationResult before = replay;
    const PolishResult r =
        Polish(trace, hardware, budget_bytes,
               PolishFor(options, workers, replays), plan, replay);
    result.replays += r.replays;
    converged = r.converged;
    if (Faster(replay, before)) result.improved = true;
  };

  // Without a plan that completes, the local search starts from the plan
  // that frees everything (the portfolio's last) where that one completes;
  // the plan so far takes its place in the portfolio.
  bool freeing_last = false;
  std::vector<Plan> starts = Portfolio(trace, hardware, options, freeing_last);
  if (!replay.feasible && freeing_last) {
    SimulationResult r =
        Replay(trace, hardware, budget_bytes, options, starts.back());
    ++result.replays;
    if (r.feasible) {
      std::swap(plan, starts.back());
      replay = std::move(r);
      result.improved = true;
      if (OnTarget(replay, options.target_ns)) return result;
    }
  }

  // Still none: first a genetic round from the plan and the portfolio, with
  // a quarter of the budget (as step 2's, ending on the target or when it
  // stalls), and the local search from its best plan. The local search from
  // a plan that does not complete spends its budget making it complete,
  // change by change, and converges late from a worse start.
  if (!replay.feasible && options.genetic_first) {
    const GeneticResult found = GeneticRound(
        trace, hardware, budget_bytes, options, workers, Seeds(plan, starts),
        options.max_replays / 4, kGeneticFirstSeed);
    result.replays += found.evaluations;
    if (found.replay.feasible) {
      Adopt(found, plan, replay);
      result.improved = true;
      if (OnTarget(replay, options.target_ns)) return result;
    }
    if (stopped() || found.stopped) return result;
  }

  // 1. Local search from the plan: a quarter of the budget; once a plan
  // completes, on until no change improves it (or the budget is spent).
  polish(options.max_replays / 4);
  if (OnTarget(replay, options.target_ns) || stopped()) return result;
  if (replay.feasible) {
    polish(options.max_replays - result.replays);
    if (OnTarget(replay, options.target_ns) || stopped()) return result;
    // A local search stays in its start's basin: where the budget has room
    // for it twice more, one from a second start.
    const int64_t first = result.replays;
    if (options.second_start && options.max_replays - first > 2 * first) {
      if (SecondStart(trace, hardware, budget_bytes, options, workers, first,
                      starts, plan, replay, result.replays, converged)) {
        result.improved = true;
      }
      if (OnTarget(replay, options.target_ns) || stopped()) return result;
    }
  }

  // 2. Rounds of a genetic search from the portfolio of starts, each
  // followed by the local search from the best plan, while a round improves
  // it.
  for (uint64_t round = 1;; ++round) {
    // Rounds go on, each from its own seed, while a generation's worth of
    // replays is left.
    const int64_t left = options.max_replays - result.replays;
    if (left < kPopulation) break;
    const std::vector<Plan> seeds = Seeds(plan, starts);
    // Two thirds of what is left; a third while no plan completes: the
    // round's job is then to find one, and the local search from it needs
    // the rest to converge.
    const int64_t evaluations =
        std::max<int64_t>(replay.feasible ? left * 2 / 3 : left / 3,
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
  }
  return result;
}

}  // namespace slackswap
