// The paper's sections: throughput against the baselines, where the time goes,
// the ablations.
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

absl::Status Report::Throughput() {
  absl::StrAppend(&md_, report_text::kThroughputIntro);
  for (const Model& m : models_) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    absl::StrAppend(&md_, "### ", m.label, "\n\n| Budget | ",
                    absl::StrJoin(kComparedLabels, " | "),
                    " | vs best | Paper (SlackSwap) |\n",
                    "|---|---|---|---|---|---|---|---|\n");
    LinePlot plot;
    plot.title = m.label + ": throughput vs activation-memory budget (A100)";
    plot.x_label = "budget (% of all-keep peak)";
    plot.y_label = "% of ideal throughput";
    plot.y_min = 0;
    plot.y_max = 100;
    plot.series.resize(std::size(kCompared));
    for (size_t i = 0; i < std::size(kCompared); ++i)
      plot.series[i].name = kComparedLabels[i];
    for (int b : budgets_) {
      std::vector<std::string> row = {absl::StrCat(b, "%")};
      for (size_t i = 0; i < std::size(kCompared); ++i) {
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(kCompared[i], *w, b));
        row.push_back(Pct(*c));
        if (c->ok()) plot.series[i].points.emplace_back(b, c->percent());
      }
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                 Cached(Policy::kSlackSwap, *w, b));
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* best,
                                 BestBaseline(*w, b, nullptr));
      row.push_back(
          ss->ok() && best != nullptr
              ? absl::StrFormat("%.2fx", ss->percent() / best->percent())
              : "-");
      std::string paper = "";
      if (b == 50) {
        paper = absl::StrCat(Figure(m.paper_at_50, 1), " (",
                             Figure(paper::kRatioToBestAt50, 2), "x)");
      }
      if (b == 30) {
        paper = absl::StrCat(Figure(paper::kSlackSwapAt30, 1), " (",
                             Figure(paper::kRatioToBestAt30, 2), "x)");
      }
      row.push_back(paper);
      absl::StrAppend(&md_, MarkdownRow(row));
      // Invariant: SlackSwap at least as fast as every baseline.
      for (Policy p : BaselinePolicies()) {
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(p, *w, b));
        Check(!c->ok() || (ss->ok() && ss->result.replay.iteration_ns <=
                                           c->result.replay.iteration_ns),
              absl::StrCat(PolicyName(p), " beats SlackSwap on ", m.label,
                           " at ", b, "%"));
      }
    }
    const std::string svg = absl::StrCat("throughput-", m.preset, ".svg");
    SLACKSWAP_RETURN_IF_ERROR(
        WriteFile(absl::StrCat("results/", svg), RenderSvg(plot)));
    absl::StrAppend(&md_, "\n![", m.label, " throughput](results/", svg,
                    ")\n\n");
  }
  // The paper's GPT-2 XL baselines at 50%.
  for (const Model& m : models_) {
    if (m.preset != "gpt2-xl") continue;
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    absl::StrAppend(
        &md_, "### ", m.label,
        " at 50%: the paper's baseline figures\n\n| Policy | Ours | Paper | "
        "Difference (points) |\n|---|---|---|---|\n");
    const std::pair<Policy, double> figures[] = {
        {Policy::kVdnn, paper::kVdnnGpt2XlAt50},
        {Policy::kSuperNeurons, paper::kSuperNeuronsGpt2XlAt50},
        {Policy::kSwapAdvisor, paper::kSwapAdvisorGpt2XlAt50}};
    for (const auto& [p, figure] : figures) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(p, *w, 50));
      const double diff = c->ok() ? c->percent() - figure : -figure;
      absl::StrAppend(&md_, MarkdownRow({PolicyName(p), Pct(*c), Figure(figure),
                                         absl::StrFormat("%+.1f", diff)}));
      if (std::abs(diff) > 7 && !options_.quick) {
        bars_.push_back(absl::StrCat(
            "DEVIATION: ", PolicyName(p), " lands ",
            absl::StrFormat("%.1f", diff),
            " points from the paper at 50% (see \"Why the baselines "
            "land where they do\")"));
      }
    }
    absl::StrAppend(&md_, "\n");
  }
  return absl::OkStatus();
}

absl::Status Report::WhereTimeGoes() {
  absl::StrAppend(
      &md_,
      absl::StrReplaceAll(
          report_text::kWhereTimeGoesIntro,
          {
              {"{step_ms}", Figure(paper::kSlackSwapGpt2XlStepMsAt50)},
              {"{ideal_ms}", Figure(paper::kGpt2XlIdealStepMs)},
              {"{vdnn_ms}", Figure(paper::kVdnnGpt2XlStepMsAt50)},
              {"{checkpointing_share}",
               Figure(paper::kCheckpointingRerunShareAt50)},
              {"{gpt_recompute}", Figure(paper::kGpt2XlRecomputeShareAt40, 1)},
              {"{llama_recompute}",
               Figure(paper::kLlama7bRecomputeShareAt40, 1)},
              {"{stall}", Figure(paper::kStallShareBoundAt40, 1)},
          }));
  for (const Model& m : models_) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : {40, 50}) {
      if (std::find(budgets_.begin(), budgets_.end(), b) == budgets_.end() &&
          !options_.quick) {
        continue;
      }
      for (size_t i = 0; i < std::size(kCompared); ++i) {
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(kCompared[i], *w, b));
        if (!c->ok()) {
          absl::StrAppend(&md_, "| ", m.label, " | ", b, "% | ",
                          kComparedLabels[i], " | infeasible | | | |\n");
          continue;
        }
        const SimulationResult& r = c->result.replay;
        absl::StrAppend(
            &md_, "| ", m.label, " | ", b, "% | ", kComparedLabels[i], " | ",
            MillisCell(r.iteration_ns), " | ", MillisCell(r.ideal_ns), " | ",
            absl::StrFormat("%.1f%%", 100.0 * r.recompute_ns / r.iteration_ns),
            " | ",
            absl::StrFormat("%.2f%%", 100.0 * r.stall_ns() / r.iteration_ns),
            " |\n");
      }
    }
  }
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

absl::Status Report::Ablations() {
  absl::StrAppend(
      &md_,
      absl::StrReplaceAll(
          report_text::kAblationsIntro,
          {
              {"{production_order}", Figure(paper::kProductionOrderLoss, 1)},
              {"{no_link_budget}", Figure(paper::kNoLinkBudgetPassLoss, 1)},
              {"{barriers}", Figure(paper::kBarriersLoss)},
          }));
  for (const Model& m : models_) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : {30, 50}) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                 Cached(Policy::kSlackSwap, *w, b));
      std::vector<std::string> row = {m.label, absl::StrCat(b, "%"), Pct(*ss)};
      for (Policy p :
           {Policy::kSlackSwapProductionOrder, Policy::kSlackSwapNoLinkBudget,
            Policy::kSlackSwapBarriers}) {
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(p, *w, b));
        row.push_back(c->ok() && ss->ok()
                          ? absl::StrFormat("%.1f (%.1f%%)",
                                            ss->percent() - c->percent(),
                                            c->percent())
                          : "infeasible");
      }
      absl::StrAppend(&md_, MarkdownRow(row));
    }
  }
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
