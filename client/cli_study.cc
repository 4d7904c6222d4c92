// slackswap study: issue 27's study beyond small traces
// (planner/beyond_small.h) on traces drawn from any seeds, in-process. One row
// per cell, then the summary that docs/results.md section 15 gives for its
// seeds.
#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_output.h"
#include "planner/beyond_small.h"

namespace slackswap {
namespace {

// More would take hours: each trace plans at four budgets, each with a
// genetic search of --genetic_evaluations replays.
constexpr int32_t kMaxTracesPerKind = 100;
constexpr int64_t kMaxGeneticEvaluations = 10'000'000;

absl::StatusOr<BeyondSmallOptions> StudyOptions() {
  BeyondSmallOptions options;
  options.first_seed = absl::GetFlag(FLAGS_first_seed);
  options.traces_per_kind = absl::GetFlag(FLAGS_traces_per_kind);
  if (options.traces_per_kind < 1 ||
      options.traces_per_kind > kMaxTracesPerKind) {
    return absl::InvalidArgumentError(
        absl::StrCat("--traces_per_kind must be in [1, ", kMaxTracesPerKind,
                     "], not ", options.traces_per_kind));
  }
  const std::string kinds = absl::GetFlag(FLAGS_kinds);
  if (!kinds.empty()) {
    options.kinds.clear();
    for (absl::string_view kind : absl::StrSplit(kinds, ',')) {
      const std::vector<std::string>& known = BeyondSmallKinds();
      if (std::find(known.begin(), known.end(), kind) == known.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--kinds: unknown kind '", kind.substr(0, 40),
                         "'; the kinds are ", absl::StrJoin(known, ", ")));
      }
      if (std::find(options.kinds.begin(), options.kinds.end(), kind) ==
          options.kinds.end()) {
        options.kinds.emplace_back(kind);
      }
    }
  }
  options.search_time_ms = absl::GetFlag(FLAGS_search_ms);
  if (!(options.search_time_ms >= 0 && options.search_time_ms <= 60'000)) {
    return absl::InvalidArgumentError(
        "--search_ms must be in [0, 60000] milliseconds");
  }
  options.references = absl::GetFlag(FLAGS_references);
  options.genetic_evaluations = absl::GetFlag(FLAGS_genetic_evaluations);
  if (options.references &&
      (options.genetic_evaluations < 1 ||
       options.genetic_evaluations > kMaxGeneticEvaluations)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--genetic_evaluations must be in [1, ", kMaxGeneticEvaluations, "]"));
  }
  return options;
}

const char* OutcomeName(PlanOutcome outcome) {
  switch (outcome) {
    case PlanOutcome::kPlanned:
      return "planned";
    case PlanOutcome::kInfeasible:
      return "infeasible";
    case PlanOutcome::kNoPlanFound:
      return "no-plan-found";
  }
  return "unknown";
}

// The best plan any search found, SlackSwap's included (0 when none did).
int64_t BestNs(const BeyondSmallCell& c) {
  int64_t best = 0;
  const auto consider = [&](bool planned, int64_t ns) {
    if (planned && (best == 0 || ns < best)) best = ns;
  };
  consider(c.slackswap == PlanOutcome::kPlanned, c.slackswap_ns);
  consider(c.other_planned, c.best_other_ns);
  consider(c.optimum_planned, c.optimum_ns);
  return best;
}

struct Summary {
  int cells = 0;
  int no_plan = 0;  // SlackSwap planned nothing where another search did
  int over1 = 0, over5 = 0;
  double median = 0, p99 = 0, worst = 0;  // losses, as fractions
  double slowest_ms = 0;
};

Summary Summarize(const std::vector<BeyondSmallCell>& cells) {
  Summary s;
  std::vector<double> losses;
  for (const BeyondSmallCell& c : cells) {
    ++s.cells;
    s.slowest_ms = std::max(s.slowest_ms, c.slackswap_ms);
    if (c.slackswap != PlanOutcome::kPlanned) {
      s.no_plan += c.other_planned || c.optimum_planned;
      continue;
    }
    const double loss = c.LossToBest();
    losses.push_back(loss);
    s.over1 += loss > 0.01;
    s.over5 += loss > 0.05;
  }
  s.median = LossQuantile(losses, 0.5);
  s.p99 = LossQuantile(losses, 0.99);
  s.worst = LossQuantile(losses, 1.0);
  return s;
}

std::string Ns(bool planned, int64_t ns) {
  return planned ? absl::StrCat(ns) : "-";
}

void PrintText(const std::vector<BeyondSmallCell>& cells, const Summary& s,
               bool references) {
  std::cout << "kind\ttrace\thardware\ttensors\tlevel\tbudget_bytes\toutcome"
               "\titeration_ns\tplanning_ms\tpasses_ns\tbest_other_ns"
               "\tbest_other\toptimum_ns\tloss\n";
  for (const BeyondSmallCell& c : cells) {
    const bool planned = c.slackswap == PlanOutcome::kPlanned;
    std::cout << absl::StrCat(
        c.kind, "\t", c.trace, "\t", c.hardware, "\t", c.tensors, "\t", c.level,
        "\t", c.budget_bytes, "\t", OutcomeName(c.slackswap), "\t",
        Ns(planned, c.slackswap_ns), "\t",
        absl::StrFormat("%.1f", c.slackswap_ms), "\t",
        Ns(c.passes == PlanOutcome::kPlanned, c.passes_ns), "\t",
        Ns(c.other_planned, c.best_other_ns), "\t",
        c.other_planned ? c.best_other : "-", "\t",
        c.optimum_gave_up ? "gave-up" : Ns(c.optimum_planned, c.optimum_ns),
        "\t",
        references && planned ? absl::StrFormat("%.2f%%", 100 * c.LossToBest())
                              : "-",
        "\n");
  }
  std::cout << absl::StrFormat(
      "\n%d cells; SlackSwap planned none where another search did in %d; "
      "the slowest plan took %.0f ms\n",
      s.cells, s.no_plan, s.slowest_ms);
  if (references) {
    std::cout << absl::StrFormat(
        "loss to the best plan any search found: median %.2f%%, p99 %.2f%%, "
        "worst %.2f%%; %d cells over 1%%, %d over 5%%\n",
        100 * s.median, 100 * s.p99, 100 * s.worst, s.over1, s.over5);
  }
}

void PrintJson(const std::vector<BeyondSmallCell>& cells, const Summary& s,
               bool references) {
  std::vector<std::string> rows;
  for (const BeyondSmallCell& c : cells) {
    const bool planned = c.slackswap == PlanOutcome::kPlanned;
    std::string row = absl::StrCat(
        "{\"kind\": \"", c.kind, "\", \"trace\": \"", c.trace,
        "\", \"hardware\": \"", c.hardware, "\", \"tensors\": ", c.tensors,
        ", \"level\": \"", c.level, "\", \"budget_bytes\": ", c.budget_bytes,
        ", \"floor_bytes\": ", c.floor_bytes, ", \"outcome\": \"",
        OutcomeName(c.slackswap),
        "\", \"planning_ms\": ", absl::StrFormat("%.3f", c.slackswap_ms),
        ", \"searched\": ", c.searched ? "true" : "false");
    if (planned) absl::StrAppend(&row, ", \"iteration_ns\": ", c.slackswap_ns);
    if (c.passes == PlanOutcome::kPlanned)
      absl::StrAppend(&row, ", \"passes_ns\": ", c.passes_ns);
    if (c.other_planned) {
      absl::StrAppend(&row, ", \"best_other_ns\": ", c.best_other_ns,
                      ", \"best_other\": \"", c.best_other, "\"");
    }
    if (c.optimum_planned)
      absl::StrAppend(&row, ", \"optimum_ns\": ", c.optimum_ns);
    if (c.optimum_gave_up) absl::StrAppend(&row, ", \"optimum_gave_up\": true");
    if (BestNs(c) > 0) absl::StrAppend(&row, ", \"best_ns\": ", BestNs(c));
    if (references && planned) {
      absl::StrAppend(&row,
                      ", \"loss\": ", absl::StrFormat("%.6f", c.LossToBest()));
    }
    rows.push_back(row + "}");
  }
  std::cout << "{\"cells\": [\n  " << absl::StrJoin(rows, ",\n  ")
            << "\n], \"summary\": {\"cells\": " << s.cells
            << ", \"no_plan\": " << s.no_plan
            << ", \"slowest_ms\": " << absl::StrFormat("%.3f", s.slowest_ms);
  if (references) {
    std::cout << absl::StrFormat(
        ", \"loss_median\": %.6f, \"loss_p99\": %.6f, \"loss_worst\": %.6f, "
        "\"over_1_percent\": %d, \"over_5_percent\": %d",
        s.median, s.p99, s.worst, s.over1, s.over5);
  }
  std::cout << "}}\n";
}

}  // namespace

int Study() {
  const absl::StatusOr<BeyondSmallOptions> options = StudyOptions();
  if (!options.ok()) return ExitFor(options.status(), kUsageExit);
  const absl::StatusOr<std::vector<BeyondSmallCell>> cells =
      RunBeyondSmallStudy(*options);
  if (!cells.ok()) return ExitFor(cells.status(), kFailureExit);
  const Summary summary = Summarize(*cells);
  if (absl::GetFlag(FLAGS_json)) {
    PrintJson(*cells, summary, options->references);
  } else {
    PrintText(*cells, summary, options->references);
  }
  return 0;
}

}  // namespace slackswap
