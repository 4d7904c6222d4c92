// Robustness: plans replayed at other speeds.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/file.h"
#include "base/status_macros.h"
#include "client/paper_figures.h"
#include "client/report/report_internal.h"
#include "client/report_text.h"
#include "client/svg_plot.h"
#include "client/text_format.h"
#include "planner/beyond_small.h"
#include "planner/frontier.h"
#include "planner/lower_bound.h"
#include "planner/optimality.h"
#include "planner/policies.h"
#include "simulator/event_model.h"
#include "simulator/schedule.h"
#include "simulator/small_traces.h"
#include "simulator/speed_scaling.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap {
namespace report_internal {

namespace {

const std::vector<std::pair<std::string, std::string>>& SpeedModels() {
  static const auto* models =
      new std::vector<std::pair<std::string, std::string>>{
          {"bert-large", "BERT-Large"},
          {"gpt2-xl", "GPT-2 XL"},
          {"llama-7b", "Llama-7B"},
          {"vgg16", "VGG-16"}};
  return *models;
}

// The passes alone under one prefetch rule: the anytime search (section 15)
// replays by the any-speed rule only, and comes on top of either.
PolicyOptions PassesOnly(const PolicyOptions& base,
                         PrefetchAdmission admission) {
  PolicyOptions options = base;
  options.slackswap.prefetch_admission = admission;
  options.slackswap.search_time_ms = 0;
  return options;
}

}  // namespace

absl::Status Report::Speeds() {
  absl::StrAppend(&md_, report_text::kSpeedsIntro);
  SLACKSWAP_RETURN_IF_ERROR(SpeedRules());
  absl::StrAppend(&md_, report_text::kSpeedsRobustness);
  return SpeedRobustness();
}

absl::Status Report::SpeedRules() {
  const PolicyOptions fits_now =
      PassesOnly(policy_options_, PrefetchAdmission::kFitsNow);
  const PolicyOptions any_speed =
      PassesOnly(policy_options_, policy_options_.slackswap.prefetch_admission);
  std::vector<int> budgets;
  for (int b = 20; b <= 90; b += 10) budgets.push_back(b);
  std::vector<std::string> header = {"Model", "GPU"};
  for (int b : budgets) header.push_back(absl::StrCat(b, "%"));
  absl::StrAppend(
      &md_, MarkdownRow(header), "|",
      absl::StrJoin(std::vector<std::string>(header.size(), "---"), "|"),
      "|\n");
  double worst = 0;
  std::string worst_where = "none";
  int compared = 0, changed = 0;
  for (const auto& [preset, label] : SpeedModels()) {
    for (const std::string& gpu : HardwarePresetNames()) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(preset, gpu));
      std::vector<std::string> row = {label, gpu};
      for (int b : budgets) {
        const int64_t budget = w->peak_bytes * b / 100;
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult now,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             w->hardware, budget, any_speed));
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult before,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             w->hardware, budget, fits_now));
        if (!now.feasible && !before.feasible) {
          row.push_back("-");
          continue;
        }
        if (!now.feasible || !before.feasible) {
          row.push_back(now.feasible ? "plans (fits-now: none)"
                                     : "no plan (fits-now plans)");
          Check(now.feasible,
                absl::StrCat("the any-speed rule loses a plan on ", w->label,
                             " at ", b, "%"));
          continue;
        }
        const double change =
            100.0 * (static_cast<double>(now.replay.iteration_ns) /
                         static_cast<double>(before.replay.iteration_ns) -
                     1.0);
        ++compared;
        if (now.replay.iteration_ns != before.replay.iteration_ns) ++changed;
        if (change > worst) {
          worst = change;
          worst_where = absl::StrFormat("%s on the %s at %d%%", label, gpu, b);
        }
        row.push_back(absl::StrFormat("%+.2f%%", change));
      }
      absl::StrAppend(&md_, MarkdownRow(row));
    }
  }
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "\n%d cells with a plan under both rules; %d differ; the largest "
          "increase is %+.2f%% (%s).\n\n",
          compared, changed, worst, worst_where));
  bars_.push_back(absl::StrFormat(
      "%s the any-speed prefetch rule moves SlackSwap's plans by at most "
      "0.5%% on every preset and GPU from 20%% to 90%%: worst %+.2f%% (%s)",
      worst <= 0.5 ? "MET" : "MISSED", worst, worst_where));
  return absl::OkStatus();
}

absl::Status Report::SpeedRobustness() {
  const PolicyOptions fits_now =
      PassesOnly(policy_options_, PrefetchAdmission::kFitsNow);
  RobustnessCounts counts;
  // The full presets on two GPUs at 30% and 50%, then two layers of each
  // transformer on the A100 at 40%, 60% and 80% (where the fits-now rule's
  // deadlocks show).
  struct Row {
    std::string preset, label, gpu;
    int layers;
    std::vector<int> budgets;
  };
  std::vector<Row> rows;
  for (const auto& [preset, label] : SpeedModels()) {
    if (preset == "vgg16") continue;
    for (const char* gpu : {"a100", "h100"})
      rows.push_back({preset, label, gpu, 0, {30, 50}});
  }
  for (const auto& [preset, label] : SpeedModels()) {
    if (preset == "vgg16") continue;
    rows.push_back({preset, label + " (2 layers)", "a100", 2, {40, 60, 80}});
  }
  for (const Row& spec : rows) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w,
                               Get(spec.preset, spec.gpu, 0, 0, spec.layers));
    for (int b : spec.budgets) {
      SLACKSWAP_RETURN_IF_ERROR(
          RobustnessRow(*w, spec.label, spec.gpu, b, fits_now, counts));
    }
  }
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "\nAll %d plans complete within their budgets in all %d scaled "
          "replays; %d of the fits-now rule's plans deadlock at one scaling "
          "or more.\n\n",
          counts.plans, counts.replays, counts.old_deadlocks));
  return absl::OkStatus();
}

absl::Status Report::RobustnessRow(const Workload& w, const std::string& label,
                                   const std::string& gpu, int b,
                                   const PolicyOptions& fits_now,
                                   RobustnessCounts& counts) {
  const int64_t budget = w.peak_bytes * b / 100;
  SLACKSWAP_ASSIGN_OR_RETURN(const Cell* now, Cached(Policy::kSlackSwap, w, b));
  std::vector<std::string> row = {label, gpu, absl::StrCat(b, "%")};
  if (!now->ok()) {
    row.push_back("no plan");
    row.insert(row.end(), 6, "");
    absl::StrAppend(&md_, MarkdownRow(row));
    return absl::OkStatus();
  }
  SimulationOptions options;
  options.budget_bytes = budget;
  const Schedule schedule = DeriveSchedule(w.trace, now->result.plan);
  const std::vector<ScaledReplay> scaled = ReplayAtScalings(
      w.trace, w.hardware, now->result.plan, schedule, options);
  row.push_back(
      absl::StrFormat("%.1f%%", 100 * now->result.replay.throughput_ratio));
  double worst_ratio = now->result.replay.throughput_ratio;
  for (const ScaledReplay& r : scaled) {
    ++counts.replays;
    Check(r.replayed && r.feasible && r.peak_resident_bytes <= budget,
          absl::StrCat("SlackSwap's plan fails at another speed on ", w.label,
                       " at ", b, "%"));
    row.push_back(r.feasible
                      ? absl::StrFormat("%.1f%%", 100 * r.throughput_ratio)
                      : "deadlock");
    worst_ratio = std::min(worst_ratio, r.throughput_ratio);
  }
  row.push_back(absl::StrFormat("%.1f%%", 100 * worst_ratio));
  ++counts.plans;
  // The plan made under the fits-now rule, replayed under it.
  SLACKSWAP_ASSIGN_OR_RETURN(
      const PlanningResult before,
      RunPolicy(Policy::kSlackSwap, w.trace, w.hardware, budget, fits_now));
  std::vector<std::string> deadlocks;
  if (before.feasible) {
    SimulationOptions old = options;
    old.prefetch_admission = PrefetchAdmission::kFitsNow;
    const Schedule old_schedule = DeriveSchedule(w.trace, before.plan);
    const std::vector<std::pair<std::string, SpeedScaling>> speeds = {
        {"link x0.5", {1, 0.5}},    {"link x2", {1, 2}},
        {"link x4", {1, 4}},        {"kernels x0.8", {0.8, 1}},
        {"kernels x1.2", {1.2, 1}}, {"kernels x2", {2, 1}}};
    for (const auto& [name, s] : speeds) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Trace trace,
                                 ScaleDurations(w.trace, s.kernel_time_factor));
      const Hardware hw =
          ScaleLinks(w.hardware, s.link_speed_factor, s.link_speed_factor);
      const SimulationResult r =
          SimulateSchedule(trace, hw, before.plan, old_schedule, old);
      if (!r.feasible) deadlocks.push_back(name);
    }
  }
  counts.old_deadlocks += deadlocks.empty() ? 0 : 1;
  row.push_back(deadlocks.empty() ? "none" : absl::StrJoin(deadlocks, ", "));
  absl::StrAppend(&md_, MarkdownRow(row));
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
