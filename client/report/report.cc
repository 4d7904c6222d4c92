// The report's workloads and cells, the bars, and the whole run.
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

absl::StatusOr<const Workload*> Report::Get(const std::string& preset,
                                            const std::string& gpu, int64_t seq,
                                            int64_t link_bytes_per_second,
                                            int layers) {
  const std::string key = absl::StrCat(preset, "/", gpu, "/", seq, "/",
                                       link_bytes_per_second, "/", layers);
  auto it = workloads_.find(key);
  if (it != workloads_.end()) return it->second.get();
  auto w = std::make_unique<Workload>();
  SLACKSWAP_ASSIGN_OR_RETURN(w->hardware, HardwarePreset(gpu));
  SLACKSWAP_ASSIGN_OR_RETURN(WorkloadSpec spec, WorkloadPreset(preset));
  if (options_.quick) spec.layers = std::min(spec.layers, 4);
  if (seq > 0) spec.sequence_length = seq;
  if (layers > 0) spec.layers = std::min(spec.layers, layers);
  SLACKSWAP_ASSIGN_OR_RETURN(TraceSpec spec_trace,
                             GenerateTrace(spec, w->hardware));
  if (link_bytes_per_second > 0) {
    w->hardware.d2h_bytes_per_second = link_bytes_per_second;
    w->hardware.h2d_bytes_per_second = link_bytes_per_second;
  }
  w->summary = Summarize(spec_trace, w->hardware);
  for (const OperatorSpec& op : spec_trace.operators)
    w->op_names.push_back(op.name);
  SLACKSWAP_ASSIGN_OR_RETURN(w->trace, ValidateTrace(spec_trace));
  w->peak_bytes = AllKeepPeakBytes(w->trace);
  w->label = key;
  return workloads_.emplace(key, std::move(w)).first->second.get();
}

absl::StatusOr<Cell> Report::RunCell(Policy policy, const Workload& w,
                                     int budget_percent) {
  Cell cell;
  const int64_t budget = w.peak_bytes * budget_percent / 100;
  const absl::Time start = absl::Now();
  SLACKSWAP_ASSIGN_OR_RETURN(cell.result, RunPolicy(policy, w.trace, w.hardware,
                                                    budget, policy_options_));
  cell.seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (cell.ok()) {
    Check(cell.result.replay.peak_resident_bytes <= budget,
          absl::StrCat(PolicyName(policy), " over budget on ", w.label));
    Check(
        cell.result.lower_bound.iteration_ns <= cell.result.replay.iteration_ns,
        absl::StrCat("lower bound above ", PolicyName(policy), " on ", w.label,
                     " at ", budget_percent, "%"));
  }
  return cell;
}

absl::StatusOr<const Cell*> Report::Cached(Policy policy, const Workload& w,
                                           int budget_percent) {
  const auto key = std::make_tuple(&w, policy, budget_percent);
  auto it = cells_.find(key);
  if (it == cells_.end()) {
    SLACKSWAP_ASSIGN_OR_RETURN(Cell cell, RunCell(policy, w, budget_percent));
    it = cells_.emplace(key, std::move(cell)).first;
  }
  return &it->second;
}

absl::StatusOr<const Cell*> Report::BestBaseline(const Workload& w,
                                                 int budget_percent,
                                                 std::string* name) {
  const Cell* best = nullptr;
  for (Policy p : BaselinePolicies()) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Cell* c, Cached(p, w, budget_percent));
    if (c->ok() && (best == nullptr || c->percent() > best->percent())) {
      best = c;
      if (name != nullptr) *name = PolicyName(p);
    }
  }
  return best;
}

void Report::Bars() {
  for (const Model& m : models_) {
    auto w = Get(m.preset, "a100");
    if (!w.ok()) continue;
    for (int b : {50, 30}) {
      auto ss = Cached(Policy::kSlackSwap, **w, b);
      auto best = BestBaseline(**w, b, nullptr);
      if (!ss.ok() || !best.ok()) continue;
      const double paper = b == 50 ? m.paper_at_50 : paper::kSlackSwapAt30.lo;
      const double mine = (*ss)->percent();
      bars_.push_back(absl::StrFormat(
          "%s %s at %d%%: SlackSwap %.1f%% against the paper's %.1f "
          "minus 1 point%s",
          mine >= paper - 1 ? "MET" : "MISSED", m.label, b, mine, paper,
          b == 30 ? " (the low end of its 30% range)" : ""));
      if (*best != nullptr) {
        const double ratio = mine / (*best)->percent();
        bars_.push_back(absl::StrFormat(
            "%s %s at %d%%: %.2fx the best baseline (bar 1.05x)",
            ratio >= 1.05 ? "MET" : "MISSED", m.label, b, ratio));
      }
    }
  }
}

absl::Status Report::WriteFile(const std::string& name,
                               const std::string& text) {
  const std::filesystem::path path =
      std::filesystem::path(options_.out_dir) / name;
  std::error_code error;
  std::filesystem::create_directories(path.parent_path(), error);
  return WriteFileBytes(path.string(), text);
}

absl::Status Report::Run() {
  const absl::Time start = absl::Now();
  SLACKSWAP_RETURN_IF_ERROR(Throughput());
  SLACKSWAP_RETURN_IF_ERROR(WhereTimeGoes());
  SLACKSWAP_RETURN_IF_ERROR(Ablations());
  SLACKSWAP_RETURN_IF_ERROR(Optimality());
  SLACKSWAP_RETURN_IF_ERROR(BoundGap());
  SLACKSWAP_RETURN_IF_ERROR(SmallTraces());
  SLACKSWAP_RETURN_IF_ERROR(Floors());
  if (!options_.quick) {
    SLACKSWAP_RETURN_IF_ERROR(LinkSweep());
    SLACKSWAP_RETURN_IF_ERROR(GpuSweep());
    SLACKSWAP_RETURN_IF_ERROR(SequenceSweep());
    SLACKSWAP_RETURN_IF_ERROR(Allocator());
    SLACKSWAP_RETURN_IF_ERROR(Uplink());
    SLACKSWAP_RETURN_IF_ERROR(Contention());
    SLACKSWAP_RETURN_IF_ERROR(Speeds());
    SLACKSWAP_RETURN_IF_ERROR(BeyondSmall());
    SLACKSWAP_RETURN_IF_ERROR(OffloadTraffic());
  }
  if (!options_.quick) Bars();
  std::string head = absl::StrCat(
      report_text::kHeader,
      options_.quick
          ? "This is the quick version (one reduced model, two budgets).\n\n"
          : "",
      "## Bars\n\n");
  for (const std::string& bar : bars_) absl::StrAppend(&head, "- ", bar, "\n");
  absl::StrAppend(
      &head, "- ",
      violation_.empty()
          ? "Invariants hold: SlackSwap at least as fast as every baseline in "
            "table 1, every plan within its budget, the lower bound below "
            "every "
            "plan, the genetic search never worse than its seed."
          : "INVARIANT VIOLATED: " + violation_,
      "\n\n");
  md_ = head + md_;
  absl::StrAppend(&md_, report_text::kWhyTheBaselines,
                  absl::StrFormat("Report generated in %.1f s.\n",
                                  absl::ToDoubleSeconds(absl::Now() - start)));
  SLACKSWAP_RETURN_IF_ERROR(WriteFile("results.md", md_));
  if (!violation_.empty()) return absl::FailedPreconditionError(violation_);
  return absl::OkStatus();
}

}  // namespace report_internal

absl::Status WriteReport(const ReportOptions& options) {
  report_internal::Report report(options);
  return report.Run();
}

}  // namespace slackswap
