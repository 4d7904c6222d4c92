// File: beyond_small.h
//
// SlackSwap against the best plan any other search finds, on traces it was
// not tuned on: the study behind docs/results.md section 15 and
// tests/planner/beyond_small_test.cc. Traces of five kinds, each drawn from
// a seed:
//   "chain", "branches", "dag": medium traces (simulator/medium_traces.h);
//   "preset": a workload preset with its layers, batch, sequence and
//             attention varied, on any GPU;
//   "small":  a random small trace (simulator/small_traces.h), where the
//             exact optimum also runs;
// and "uplink": a medium trace on two GPUs behind one shared uplink as
// fast as one GPU's link. Budgets: the proven floor and 2%, 10% and 30% of
// the way from it to the all-keep peak.
//
// Each cell plans with SlackSwap (its defaults: the anytime search on), and
// with the genetic search at `genetic_evaluations` seeded with SlackSwap's
// plan, the all-keep and the all-swap plans, SwapAdvisor and block
// checkpointing, and the exact optimum where the trace has at most 16
// tensors. "Best" is the fastest plan any of them finds.
#ifndef SLACKSWAP_PLANNER_BEYOND_SMALL_H_
#define SLACKSWAP_PLANNER_BEYOND_SMALL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "planner/planner_options.h"
#include "planner/planning_result.h"
#include "simulator/hardware.h"

namespace slackswap {

struct BeyondSmallCell {
  std::string kind;   // "chain", "branches", "dag", "preset", "small", "uplink"
  std::string trace;  // the trace's name
  std::string hardware;
  int32_t tensors = 0;
  std::string level;  // "floor", "+2%", "+10%", "+30%"
  int64_t budget_bytes = 0;
  int64_t floor_bytes = 0;
  PlanOutcome slackswap = PlanOutcome::kNoPlanFound;
  int64_t slackswap_ns = 0;  // its iteration, when planned
  double slackswap_ms = 0;   // wall-clock planning time (the median run)
  bool searched = false;     // the anytime search ran
  // SlackSwap's passes alone (no anytime search), for comparison.
  PlanOutcome passes = PlanOutcome::kNoPlanFound;
  int64_t passes_ns = 0;
  // The fastest plan of any other search, when one planned; which.
  bool other_planned = false;
  int64_t best_other_ns = 0;
  std::string best_other;
  // The exact optimum (at most 16 tensors), when it ran.
  bool optimum_ran = false;
  // It was tried and gave up at OptimumOptions::max_replays (no optimum).
  bool optimum_gave_up = false;
  bool optimum_planned = false;
  int64_t optimum_ns = 0;

  // SlackSwap's iteration over the best any search found (SlackSwap's
  // included) minus 1; 0 when SlackSwap did not plan.
  double LossToBest() const;
};

// Every kind, in the study's order.
const std::vector<std::string>& BeyondSmallKinds();

struct BeyondSmallOptions {
  uint64_t first_seed = 1;
  int32_t traces_per_kind = 4;
  std::vector<std::string> kinds = BeyondSmallKinds();
  int64_t genetic_evaluations = 20'000;
  // The other searches and the exact optimum; false: SlackSwap and its
  // passes alone (a quick look at its answers on other seeds: then no
  // cell has another plan, and LossToBest is 0).
  bool references = true;
  int32_t max_tensors = 300;
  // SlackSwap's anytime search (PlannerOptions::search_time_ms; 0: the
  // passes alone, for comparison).
  double search_time_ms = PlannerOptions().search_time_ms;
  // SlackSwap plans each cell this many times (odd): its time is the
  // median run's (a shared machine is noisy), and every run must give the
  // same plan (an error otherwise).
  int32_t timing_runs = 1;
};

// The q-quantile of `losses` (q in [0, 1]) as the study reports it: the
// element at rank floor(q * n), the largest for q = 1; 0 when empty.
double LossQuantile(std::vector<double> losses, double q);

absl::StatusOr<std::vector<BeyondSmallCell>> RunBeyondSmallStudy(
    const BeyondSmallOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_BEYOND_SMALL_H_
