#include "planner/genetic.h"

#include <algorithm>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "base/stop.h"
#include "planner/replay_cost.h"
#include "simulator/schedule.h"

namespace slackswap {
namespace {

struct Fitness {
  bool feasible = false;
  int64_t time_ns = 0;  // iteration, or how far an infeasible replay got

  bool BetterThan(const Fitness& other) const {
    if (feasible != other.feasible) return feasible;
    return feasible ? time_ns < other.time_ns : time_ns > other.time_ns;
  }
};

// With GeneticOptions::earliest_issue, the breedings a child gets before
// it is replayed even though it repeats a known plan.
constexpr int kBreedAttempts = 4;

struct Individual {
  Plan plan;
  Fitness fitness;
  SimulationResult replay;
};

class Search {
 public:
  Search(const Trace& trace, const Hardware& hardware, int64_t budget,
         const GeneticOptions& options)
      : trace_(trace),
        hw_(hardware),
        options_(options),
        run_starts_(BlockRunStarts(trace)),
        earliest_(
            options.earliest_issue &&
            EarliestIssueIsBest(options.physics, PrefetchAdmission::kAnySpeed)),
        transfer_times_(ComputeTransferTimes(trace, hardware, options.physics)),
        rng_(options.seed) {
    sim_.budget_bytes = budget;
    sim_.per_layer_barriers = options.per_layer_barriers;
    sim_.physics = options.physics;
    sim_.transfer_times = &transfer_times_;
    for (int32_t t = 0; t < trace.num_tensors(); ++t) {
      if (trace.tensors[t].size_bytes > 0) mutable_.push_back(t);
    }
  }

  GeneticResult Run(const std::vector<Plan>& seeds);
  Search(const Search&) = delete;
  Search& operator=(const Search&) = delete;

 private:
  // Makes `plan` valid: allowed decisions (NormalizeDecisions, which a
  // second call leaves as they are) and issue points inside their window.
  void Normalize(Plan& plan) const;
  void NormalizeDecisions(Plan& plan) const;
  // Replays `batch`, each stopping once it cannot finish under `cutoff_ns`.
  void Evaluate(std::vector<Individual>& batch,
                int64_t cutoff_ns = SimulationOptions::kNoCutoff);
  Plan Breed(const std::vector<Individual>& pool);
  void BreedChildren(const std::vector<Individual>& pool, bool feasible,
                     std::vector<Individual>& children, GeneticResult& result);
  void Mutate(Plan& plan);
  const Individual& Tournament(const std::vector<Individual>& pool);

  const Trace& trace_;
  const Hardware& hw_;
  const GeneticOptions& options_;
  const std::vector<int32_t> run_starts_;
  // Every swap issued at the earliest point of its window
  // (GeneticOptions::earliest_issue, where it applies).
  const bool earliest_;
  const TransferTimes transfer_times_;  // (sim_'s)
  SimulationOptions sim_;
  std::vector<int32_t> mutable_;
  std::mt19937_64 rng_;
  int64_t evaluations_ = 0;
  int64_t spent_millis_ = 0;
  int64_t cut_ = 0;
};

void Search::NormalizeDecisions(Plan& plan) const {
  int64_t swapped = 0;
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    const Tensor& tensor = trace_.tensors[t];
    Decision& d = plan.decisions[t];
    if (d == Decision::kSwap && tensor.swap_forbidden) d = Decision::kKeep;
    if (d == Decision::kRecompute &&
        (tensor.recompute_forbidden || !options_.allow_recompute)) {
      d = Decision::kKeep;
    }
    if (d == Decision::kSwap) {
      swapped += tensor.size_bytes;
      if (hw_.host_pinned_memory_bytes > 0 &&
          swapped > hw_.host_pinned_memory_bytes) {
        d = Decision::kKeep;
        swapped -= tensor.size_bytes;
      }
    }
  }
}

void Search::Normalize(Plan& plan) const {
  NormalizeDecisions(plan);
  const std::vector<int32_t> need = DeriveNeeds(trace_, plan.decisions);
  for (int32_t t = 0; t < trace_.num_tensors(); ++t) {
    if (plan.decisions[t] != Decision::kSwap) {
      plan.prefetch_issue_op[t] = 0;
      continue;
    }
    const IssueWindow window = IssueWindowOf(
        trace_, t, need[t], options_.per_layer_barriers, run_starts_);
    plan.prefetch_issue_op[t] =
        earliest_ ? window.earliest : window.Clamp(plan.prefetch_issue_op[t]);
  }
}

void Search::Evaluate(std::vector<Individual>& batch, int64_t cutoff_ns) {
  // The evaluators' replays stop with the caller's.
  const StopFunction* stop = CurrentStop();
  SimulationOptions sim = sim_;
  sim.cutoff_ns = cutoff_ns;
  auto replay = [&](size_t i) {
    Individual& ind = batch[i];
    Normalize(ind.plan);
    // Derived into the thread's own schedule, whose memory each replay
    // reuses.
    thread_local Schedule schedule;
    DeriveSchedule(trace_, ind.plan, schedule);
    ind.replay = SimulateSchedule(trace_, hw_, ind.plan, schedule, sim);
    ind.fitness = {ind.replay.feasible, ind.replay.iteration_ns};
  };
  if (options_.workers != nullptr) {
    options_.workers->ForEach(batch.size(), replay);
  } else {
    auto work = [&](size_t begin, size_t step) {
      ScopedStop scope(stop);
      for (size_t i = begin; i < batch.size(); i += step) replay(i);
    };
    const size_t threads =
        std::max<size_t>(1, std::min<size_t>(options_.threads, batch.size()));
    std::vector<std::thread> pool;
    for (size_t k = 1; k < threads; ++k) pool.emplace_back(work, k, threads);
    work(0, threads);
    for (std::thread& t : pool) t.join();
  }
  evaluations_ += static_cast<int64_t>(batch.size());
  for (const Individual& ind : batch) {
    if (ind.replay.cut_off) ++cut_;
    spent_millis_ += options_.charge_partial_replays
                         ? ReplayCostMillis(trace_, ind.replay)
                         : kReplayMillis;
  }
}

const Individual& Search::Tournament(const std::vector<Individual>& pool) {
  std::uniform_int_distribution<size_t> pick(0, pool.size() - 1);
  const Individual* best = &pool[pick(rng_)];
  for (int i = 0; i < 2; ++i) {
    const Individual& other = pool[pick(rng_)];
    if (other.fitness.BetterThan(best->fitness)) best = &other;
  }
  return *best;
}

void Search::Mutate(Plan& plan) {
  if (mutable_.empty()) return;
  std::uniform_int_distribution<size_t> pick(0, mutable_.size() - 1);
  std::geometric_distribution<int> count(0.5);
  const int changes = 1 + count(rng_);
  for (int c = 0; c < changes; ++c) {
    const int32_t t = mutable_[pick(rng_)];
    const uint64_t roll = rng_() % 4;
    // (With earliest_, issue points do not move: the roll changes the
    // decision instead.)
    if (plan.decisions[t] == Decision::kSwap && roll == 0 && !earliest_) {
      // Move the prefetch: up to 16 ops either way (clamped by Normalize).
      plan.prefetch_issue_op[t] += static_cast<int32_t>(rng_() % 33) - 16;
      continue;
    }
    const Decision choices[] = {Decision::kKeep, Decision::kSwap,
                                Decision::kRecompute};
    const int n = options_.allow_recompute ? 3 : 2;
    Decision d = choices[rng_() % n];
    if (d == plan.decisions[t]) d = choices[(static_cast<int>(d) + 1) % n];
    plan.decisions[t] = d;
    if (d == Decision::kSwap) {
      // A fresh swap is prefetched a few ops before its first backward use.
      plan.prefetch_issue_op[t] = trace_.tensors[t].first_backward_use -
                                  static_cast<int32_t>(rng_() % 17);
    }
  }
}

Plan Search::Breed(const std::vector<Individual>& pool) {
  const Individual& a = Tournament(pool);
  const Individual& b = Tournament(pool);
  Plan child = a.plan;
  // A trace without tensors has nothing to cross (and no cut point).
  if (&a != &b && !child.decisions.empty() && rng_() % 2 == 0) {
    // One-point crossover in tensor order keeps neighbouring decisions (a
    // layer's tensors) together.
    const size_t cut = rng_() % child.decisions.size();
    for (size_t t = cut; t < child.decisions.size(); ++t) {
      child.decisions[t] = b.plan.decisions[t];
      child.prefetch_issue_op[t] = b.plan.prefetch_issue_op[t];
    }
  }
  Mutate(child);
  return child;  // (Evaluate normalizes it, on the replaying thread)
}

// Breeds `children` (sized) from `pool`; `feasible`: whether a plan of the
// search has completed.
void Search::BreedChildren(const std::vector<Individual>& pool, bool feasible,
                           std::vector<Individual>& children,
                           GeneticResult& result) {
  if (earliest_ && feasible) {
    // With every swap at the earliest a plan is its decisions, and many
    // children repeat a plan of the pool or of the generation (parents
    // that differed in issue points alone): once a plan completes, such a
    // child is bred again, up to kBreedAttempts times, so that the
    // replays go to plans not yet known and the pool keeps its variety.
    // (While none completes, the pool's repeats of the plans that get
    // furthest are what the search climbs by.)
    std::set<std::vector<Decision>> known;
    for (const Individual& ind : pool) known.insert(ind.plan.decisions);
    for (Individual& child : children) {
      for (int attempt = 1;; ++attempt) {
        child.plan = Breed(pool);
        // (Its issue points follow from its decisions: Evaluate sets them,
        // on the replaying threads.)
        NormalizeDecisions(child.plan);
        if (known.insert(child.plan.decisions).second ||
            attempt == kBreedAttempts) {
          break;
        }
        ++result.bred_again;
      }
    }
  } else {
    for (Individual& child : children) child.plan = Breed(pool);
  }
}

GeneticResult Search::Run(const std::vector<Plan>& seeds) {
  const size_t population =
      static_cast<size_t>(std::max(options_.population, 2));
  std::vector<Individual> pool;
  for (const Plan& seed : seeds) {
    Individual ind;
    ind.plan = seed;
    pool.push_back(std::move(ind));
  }
  // Fill the first generation: every fourth a random plan (a random allowed
  // decision per tensor, prefetches a few ops before their need), the rest
  // mutants of the seeds.
  for (size_t i = 0; pool.size() < population; ++i) {
    Individual ind;
    if (i % 4 == 3) {
      ind.plan = Plan::AllKeep(trace_);
      const int n = options_.allow_recompute ? 3 : 2;
      for (int32_t t : mutable_) {
        ind.plan.decisions[t] = static_cast<Decision>(rng_() % n);
        ind.plan.prefetch_issue_op[t] = trace_.tensors[t].first_backward_use -
                                        static_cast<int32_t>(rng_() % 17);
      }
    } else {
      ind.plan = seeds[i % seeds.size()];
      Mutate(ind.plan);
    }
    pool.push_back(std::move(ind));
  }
  Evaluate(pool);  // (which normalizes every plan first)
  GeneticResult result;
  const auto on_target = [&] {
    for (const Individual& ind : pool) {
      if (ind.fitness.feasible && ind.fitness.time_ns <= options_.target_ns)
        return true;
    }
    return false;
  };
  Fitness best_so_far =
      std::min_element(pool.begin(), pool.end(),
                       [](const Individual& x, const Individual& y) {
                         return x.fitness.BetterThan(y.fitness);
                       })
          ->fitness;
  int32_t stalled = 0;
  const int64_t budget_millis = options_.max_evaluations * kReplayMillis;
  // What a child's replay may cost at most: each counts as one, or with
  // charge_partial_replays at its work (replay_cost.h).
  const int64_t dearest = options_.charge_partial_replays
                              ? MaxReplayMillis(trace_, hw_, options_.physics)
                              : kReplayMillis;
  // A generation only while one more child fits in the budget.
  while (budget_millis - spent_millis_ >= dearest && !on_target()) {
    if (options_.should_stop && options_.should_stop()) {
      result.stopped = true;
      break;
    }
    if (options_.stall_generations > 0 &&
        stalled >= options_.stall_generations) {
      break;
    }
    // Children that still fit, each at the most it may cost.
    const int64_t room = (budget_millis - spent_millis_) / dearest;
    std::vector<Individual> children(
        std::min<int64_t>(static_cast<int64_t>(population), room));
    BreedChildren(pool, best_so_far.feasible, children, result);
    // A full pool of completed plans: a child slower than its slowest is
    // never kept (ties keep the older), so its replay may stop there.
    int64_t cutoff_ns = SimulationOptions::kNoCutoff;
    if (options_.cut_off_children && pool.size() >= population &&
        std::all_of(pool.begin(), pool.end(),
                    [](const Individual& i) { return i.fitness.feasible; })) {
      cutoff_ns = 0;
      for (const Individual& i : pool)
        cutoff_ns = std::max(cutoff_ns, i.fitness.time_ns);
    }
    Evaluate(children, cutoff_ns);
    for (Individual& child : children) pool.push_back(std::move(child));
    // Keep the best `population`; ties keep the earlier (older) individual.
    std::vector<size_t> order(pool.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      return pool[x].fitness.BetterThan(pool[y].fitness);
    });
    std::vector<Individual> next;
    for (size_t i = 0; i < population && i < order.size(); ++i) {
      next.push_back(std::move(pool[order[i]]));
    }
    pool = std::move(next);
    const Fitness& now = pool.front().fitness;  // sorted: the best first
    if (now.BetterThan(best_so_far)) {
      best_so_far = now;
      stalled = 0;
    } else {
      ++stalled;
    }
  }
  const auto best = std::min_element(
      pool.begin(), pool.end(), [](const Individual& x, const Individual& y) {
        return x.fitness.BetterThan(y.fitness);
      });
  result.best = best->plan;
  result.replay = best->replay;
  result.evaluations = options_.charge_partial_replays
                           ? (spent_millis_ + kReplayMillis - 1) / kReplayMillis
                           : evaluations_;
  result.replays_run = evaluations_;
  result.replays_cut = cut_;
  return result;
}

}  // namespace

GeneticResult RunGenetic(const Trace& trace, const Hardware& hardware,
                         int64_t budget_bytes, const std::vector<Plan>& seeds,
                         const GeneticOptions& options) {
  Search search(trace, hardware, budget_bytes, options);
  return search.Run(seeds);
}

}  // namespace slackswap
