// The sweeps: link rate, GPU, sequence length.
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

absl::Status Report::LinkSweep() {
  absl::StrAppend(
      &md_, absl::StrReplaceAll(
                report_text::kLinkSweepIntro,
                {
                    {"{swapped_12}", Figure(paper::kSwappedGbAt12, 1)},
                    {"{recomputed_12}", Figure(paper::kRecomputedGbAt12, 1)},
                    {"{swapped_200}", Figure(paper::kSwappedGbAt200, 1)},
                    {"{lead}", Figure(paper::kLinkSweepLeadPoints)},
                }));
  LinePlot plot;
  plot.title =
      "GPT-2 XL at 30%: bytes swapped and recomputed vs link bandwidth";
  plot.x_label = "host link bandwidth per direction (GB/s)";
  plot.y_label = "GB";
  plot.series = {{"swapped", {}}, {"recomputed", {}}};
  for (int gbps : {12, 16, 25, 32, 50, 64, 100, 200}) {
    SLACKSWAP_ASSIGN_OR_RETURN(
        const Workload* w,
        Get("gpt2-xl", "a100", 0, int64_t{gbps} * 1'000'000'000));
    SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                               Cached(Policy::kSlackSwap, *w, 30));
    std::string best_name;
    SLACKSWAP_ASSIGN_OR_RETURN(const Cell* best,
                               BestBaseline(*w, 30, &best_name));
    if (!ss->ok()) {
      absl::StrAppend(&md_, "| ", gbps, " | infeasible | | | | |\n");
      continue;
    }
    const SimulationResult& r = ss->result.replay;
    plot.series[0].points.emplace_back(gbps, r.swapped_bytes / 1e9);
    plot.series[1].points.emplace_back(gbps, r.recomputed_bytes / 1e9);
    absl::StrAppend(
        &md_, "| ", gbps, " | ", GigabytesCell(r.swapped_bytes), " | ",
        GigabytesCell(r.recomputed_bytes), " | ", Pct(*ss), " | ",
        best ? absl::StrCat(Pct(*best), " (", best_name, ")") : "infeasible",
        " | ",
        best ? absl::StrFormat("%.1f", ss->percent() - best->percent()) : "-",
        " |\n");
  }
  SLACKSWAP_RETURN_IF_ERROR(
      WriteFile("results/link-sweep.svg", RenderSvg(plot)));
  absl::StrAppend(&md_, "\n![Link sweep](results/link-sweep.svg)\n\n");
  return absl::OkStatus();
}

absl::Status Report::GpuSweep() {
  absl::StrAppend(&md_,
                  absl::StrReplaceAll(
                      report_text::kGpuSweepIntro,
                      {
                          {"{ratio}", Figure(paper::kGpuRatioToBestAt30, 2)},
                      }));
  double lo = 1e9, hi = 0;
  for (const Model& m : models_) {
    for (const char* gpu : {"v100", "a100", "h100"}) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, gpu));
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                 Cached(Policy::kSlackSwap, *w, 30));
      std::string best_name;
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* best,
                                 BestBaseline(*w, 30, &best_name));
      std::string ratio = "-";
      if (ss->ok() && best != nullptr) {
        const double x = ss->percent() / best->percent();
        lo = std::min(lo, x), hi = std::max(hi, x);
        ratio = absl::StrFormat("%.2fx", x);
      }
      absl::StrAppend(
          &md_, "| ", m.label, " | ", gpu, " | ", Pct(*ss), " | ",
          best ? absl::StrCat(Pct(*best), " (", best_name, ")") : "infeasible",
          " | ", ratio, " |\n");
    }
  }
  absl::StrAppend(&md_,
                  absl::StrFormat("\nRange: %.2fx to %.2fx.\n\n", lo, hi));
  return absl::OkStatus();
}

absl::Status Report::SequenceSweep() {
  absl::StrAppend(
      &md_,
      absl::StrReplaceAll(
          report_text::kSequenceSweepIntro,
          {
              {"{hideable_from}", Figure(paper::kHideablePercent.lo)},
              {"{hideable_to}", Figure(paper::kHideablePercent.hi)},
              {"{slackswap_from}", Figure(paper::kSlackSwapBySequence.lo, 1)},
              {"{slackswap_to}", Figure(paper::kSlackSwapBySequence.hi, 1)},
          }));
  LinePlot plot;
  plot.title =
      "Llama-7B at 50%: hideable fraction and throughput vs sequence length";
  plot.x_label = "sequence length (K tokens)";
  plot.y_label = "%";
  plot.series = {{"hideable fraction", {}}, {"SlackSwap % of ideal", {}}};
  for (int64_t seq : {2048, 4096, 8192, 16384, 32768}) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get("llama-7b", "a100", seq));
    SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                               Cached(Policy::kSlackSwap, *w, 50));
    std::string best_name;
    SLACKSWAP_ASSIGN_OR_RETURN(const Cell* best,
                               BestBaseline(*w, 50, &best_name));
    const double hideable = 100 * w->summary.hideable_fraction;
    plot.series[0].points.emplace_back(seq / 1024.0, hideable);
    if (ss->ok())
      plot.series[1].points.emplace_back(seq / 1024.0, ss->percent());
    absl::StrAppend(
        &md_, "| ", seq, " | ", absl::StrFormat("%.1f%%", hideable), " | ",
        Pct(*ss), " | ",
        best ? absl::StrCat(Pct(*best), " (", best_name, ")") : "infeasible",
        " | ", GigabytesCell(ss->result.replay.swapped_bytes), " | ",
        GigabytesCell(ss->result.replay.recomputed_bytes), " |\n");
  }
  SLACKSWAP_RETURN_IF_ERROR(
      WriteFile("results/sequence-sweep.svg", RenderSvg(plot)));
  absl::StrAppend(&md_, "\n![Sequence sweep](results/sequence-sweep.svg)\n\n");
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
