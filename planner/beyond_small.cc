#include "planner/beyond_small.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "planner/basic_plans.h"
#include "planner/genetic.h"
#include "planner/lower_bound.h"
#include "planner/optimum.h"
#include "planner/policies.h"
#include "simulator/medium_traces.h"
#include "simulator/small_traces.h"
#include "simulator/splitmix.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

struct Case {
  Trace trace;
  Hardware hardware;
};

// A workload preset with its shape varied, on a GPU, from `seed`.
absl::StatusOr<Case> PresetVariant(uint64_t seed) {
  SplitMix64 r(seed * 0xD1B54A32D192ED03ull + 3);
  const std::vector<std::string>& presets = WorkloadPresetNames();
  const std::vector<std::string>& gpus = HardwarePresetNames();
  SLACKSWAP_ASSIGN_OR_RETURN(
      WorkloadSpec spec,
      WorkloadPreset(
          presets[r.Int(0, static_cast<int64_t>(presets.size()) - 1)]));
  spec.layers = static_cast<int32_t>(r.Int(1, 4));
  spec.batch = r.Int(1, 8);
  if (spec.sequence_length > 0) {
    spec.sequence_length = int64_t{512} << r.Int(0, 3);
  }
  spec.flash_attention = r.Chance(60);
  SLACKSWAP_ASSIGN_OR_RETURN(
      Hardware hardware,
      HardwarePreset(gpus[r.Int(0, static_cast<int64_t>(gpus.size()) - 1)]));
  SLACKSWAP_ASSIGN_OR_RETURN(TraceSpec spec_trace,
                             GenerateTrace(spec, hardware));
  spec_trace.name = absl::StrCat(spec.preset, "-l", spec.layers, "-b",
                                 spec.batch, "-s", spec.sequence_length,
                                 spec.flash_attention ? "" : "-noflash");
  SLACKSWAP_ASSIGN_OR_RETURN(Trace trace, ValidateTrace(spec_trace));
  return Case{std::move(trace), hardware};
}

absl::StatusOr<Case> MakeCase(const std::string& kind, uint64_t seed,
                              int32_t max_tensors) {
  if (kind == "preset") return PresetVariant(seed);
  if (kind == "small") {
    const SmallTrace small = RandomSmallTrace(seed, {4, 16, 10});
    SLACKSWAP_ASSIGN_OR_RETURN(Trace trace, ValidateTrace(small.trace));
    return Case{std::move(trace), small.hardware};
  }
  MediumTraceOptions options;
  options.max_tensors = max_tensors;
  if (kind == "chain" || kind == "uplink") {
    options.shape = kind == "chain" ? MediumShape::kChain : MediumShape::kDag;
  } else if (kind == "branches") {
    options.shape = MediumShape::kBranches;
  } else if (kind == "dag") {
    options.shape = MediumShape::kDag;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown kind ", kind));
  }
  // The uplink kind draws its traces from other seeds than the DAG kind.
  const MediumTrace medium =
      RandomMediumTrace(kind == "uplink" ? seed + 1000 : seed, options);
  SLACKSWAP_ASSIGN_OR_RETURN(Trace trace, ValidateTrace(medium.trace));
  Hardware hardware = medium.hardware;
  if (kind == "uplink") {
    hardware.gpus_per_uplink = 2;
    hardware.uplink_d2h_bytes_per_second = hardware.d2h_bytes_per_second;
    hardware.uplink_h2d_bytes_per_second = hardware.h2d_bytes_per_second;
    hardware.name += "-2-per-uplink";
  }
  return Case{std::move(trace), hardware};
}

}  // namespace

const std::vector<std::string>& BeyondSmallKinds() {
  static const auto* kinds = new std::vector<std::string>{
      "chain", "branches", "dag", "preset", "small", "uplink"};
  return *kinds;
}

double LossQuantile(std::vector<double> losses, double q) {
  if (losses.empty()) return 0;
  std::sort(losses.begin(), losses.end());
  return losses[std::min(
      losses.size() - 1,
      static_cast<size_t>(q * static_cast<double>(losses.size())))];
}

double BeyondSmallCell::LossToBest() const {
  if (slackswap != PlanOutcome::kPlanned) return 0;
  int64_t best = slackswap_ns;
  if (other_planned) best = std::min(best, best_other_ns);
  if (optimum_planned) best = std::min(best, optimum_ns);
  return static_cast<double>(slackswap_ns) / static_cast<double>(best) - 1;
}

absl::StatusOr<std::vector<BeyondSmallCell>> RunBeyondSmallStudy(
    const BeyondSmallOptions& options) {
  std::vector<BeyondSmallCell> cells;
  for (const std::string& kind : options.kinds) {
    for (int32_t i = 0; i < options.traces_per_kind; ++i) {
      const uint64_t seed = options.first_seed + static_cast<uint64_t>(i);
      SLACKSWAP_ASSIGN_OR_RETURN(Case c,
                                 MakeCase(kind, seed, options.max_tensors));
      if (!CheckTimeRange(c.trace, c.hardware).ok() ||
          !CheckPhysics(c.trace, c.hardware, Physics()).ok()) {
        continue;
      }
      const int64_t peak = AllKeepPeakBytes(c.trace);
      const int64_t floor = ComputeProvenFloor(c.trace).bytes;
      const std::pair<const char*, double> levels[] = {
          {"floor", 0}, {"+2%", 0.02}, {"+10%", 0.1}, {"+30%", 0.3}};
      for (const auto& [level, fraction] : levels) {
        BeyondSmallCell cell;
        cell.kind = kind;
        cell.trace = c.trace.name;
        cell.hardware = c.hardware.name;
        cell.tensors = c.trace.num_tensors();
        cell.level = level;
        cell.floor_bytes = floor;
        cell.budget_bytes =
            floor +
            static_cast<int64_t>(static_cast<double>(peak - floor) * fraction);
        const int64_t budget = cell.budget_bytes;
        PolicyOptions policy_options;
        policy_options.slackswap.search_time_ms = options.search_time_ms;
        std::vector<double> times;
        PlanningResult ss;
        for (int32_t run = 0; run < std::max(options.timing_runs, 1); ++run) {
          const absl::Time start = absl::Now();
          SLACKSWAP_ASSIGN_OR_RETURN(
              PlanningResult r, RunPolicy(Policy::kSlackSwap, c.trace,
                                          c.hardware, budget, policy_options));
          times.push_back(absl::ToDoubleMilliseconds(absl::Now() - start));
          if (run > 0 &&
              (r.plan.decisions != ss.plan.decisions ||
               r.plan.prefetch_issue_op != ss.plan.prefetch_issue_op)) {
            return absl::InternalError(
                absl::StrCat("SlackSwap planned ", c.trace.name,
                             " differently in run ", run));
          }
          ss = std::move(r);
        }
        std::sort(times.begin(), times.end());
        cell.slackswap_ms = times[times.size() / 2];
        cell.slackswap = ss.Outcome();
        cell.slackswap_ns = ss.replay.iteration_ns;
        cell.searched = ss.stats.search_replays > 0;
        PolicyOptions passes_only = policy_options;
        passes_only.slackswap.search_time_ms = 0;
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult passes,
                                   RunPolicy(Policy::kSlackSwap, c.trace,
                                             c.hardware, budget, passes_only));
        cell.passes = passes.Outcome();
        cell.passes_ns = passes.replay.iteration_ns;
        if (!options.references) {
          cells.push_back(std::move(cell));
          continue;
        }
        const auto consider = [&](const char* name, bool feasible, int64_t ns) {
          if (!feasible) return;
          if (!cell.other_planned || ns < cell.best_other_ns) {
            cell.other_planned = true;
            cell.best_other_ns = ns;
            cell.best_other = name;
          }
        };
        // The genetic search at a large evaluation count, from SlackSwap's
        // plan and the two extremes.
        GeneticOptions genetic;
        genetic.max_evaluations = options.genetic_evaluations;
        std::vector<Plan> seeds = {ss.plan, Plan::AllKeep(c.trace)};
        if (c.hardware.host_pinned_memory_bytes == 0)
          seeds.push_back(AllSwapPlan(c.trace));
        const GeneticResult found =
            RunGenetic(c.trace, c.hardware, budget, seeds, genetic);
        consider("genetic-search", found.replay.feasible,
                 found.replay.iteration_ns);
        for (Policy p : {Policy::kSwapAdvisor, Policy::kCheckpointing}) {
          SLACKSWAP_ASSIGN_OR_RETURN(
              const PlanningResult r,
              RunPolicy(p, c.trace, c.hardware, budget, policy_options));
          consider(PolicyName(p), r.feasible, r.replay.iteration_ns);
        }
        if (c.trace.num_tensors() <= kMaxOptimumTensors &&
            !UsesNodePhysics(c.hardware, Physics())) {
          const absl::StatusOr<PlanningResult> opt =
              PlanOptimum(c.trace, c.hardware, budget, OptimumOptions());
          if (absl::IsResourceExhausted(opt.status())) {
            // The exact search gave up (OptimumOptions::max_replays): the
            // cell has no optimum, as a larger trace has none.
            cell.optimum_gave_up = true;
          } else {
            SLACKSWAP_RETURN_IF_ERROR(opt.status());
            cell.optimum_ran = true;
            cell.optimum_planned = opt->feasible;
            cell.optimum_ns = opt->replay.iteration_ns;
          }
        }
        cells.push_back(std::move(cell));
      }
    }
  }
  return cells;
}

}  // namespace slackswap
