// Node physics: the caching allocator, the shared uplink, HBM contention.
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

absl::Status Report::Allocator() {
  absl::StrAppend(&md_, report_text::kAllocatorIntro);
  constexpr AllocatorKind kKinds[] = {AllocatorKind::kCaching,
                                      AllocatorKind::kExpandable};
  for (const Model& m : models_) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : {30, 50}) {
      const int64_t budget = w->peak_bytes * b / 100;
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* plain,
                                 Cached(Policy::kSlackSwap, *w, b));
      std::vector<std::string> row = {
          m.label, absl::StrCat(b, "%"), Pct(*plain),
          Gigabytes(plain->result.replay.peak_resident_bytes)};
      // The resident plan, observed by each allocator.
      for (AllocatorKind kind : kKinds) {
        Physics observing;
        observing.allocator = kind;
        SLACKSWAP_ASSIGN_OR_RETURN(
            const SimulationResult observed,
            Simulate(w->trace, w->hardware, plain->result.plan,
                     AllocatorReplayOptions(budget, observing, false)));
        row.push_back(Gigabytes(observed.peak_reserved_bytes));
        row.push_back(Gigabytes(observed.fragmentation_bytes));
      }
      // Planned for the reserved budget.
      for (AllocatorKind kind : kKinds) {
        Physics reserving;
        reserving.allocator = kind;
        reserving.budget_reserved = true;
        // (As RunPolicyWithinBudget plans: the allocator in the options'
        // physics, which RunPolicy leaves out of the replays.)
        PolicyOptions options = policy_options_;
        options.physics = reserving;
        SLACKSWAP_ASSIGN_OR_RETURN(
            PlanningResult reserved,
            PlanUnderAllocator(w->trace, w->hardware, budget, reserving,
                               [&](int64_t resident_budget) {
                                 return RunPolicy(Policy::kSlackSwap, w->trace,
                                                  w->hardware, resident_budget,
                                                  options);
                               }));
        Check(
            !reserved.feasible || reserved.replay.peak_reserved_bytes <= budget,
            absl::StrCat("reserved budget exceeded on ", w->label));
        Cell cell;
        cell.result = std::move(reserved);
        row.push_back(Pct(cell));
        row.push_back(absl::StrFormat(
            "%.1f%%",
            100.0 * static_cast<double>(cell.result.planned_budget_bytes) /
                static_cast<double>(budget)));
      }
      absl::StrAppend(&md_, MarkdownRow(row));
    }
  }
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

absl::Status Report::Uplink() {
  absl::StrAppend(&md_, report_text::kUplinkIntro);
  constexpr int64_t kUplink = 25'000'000'000;  // PCIe 4.0 x16
  for (const Model& m : models_) {
    if (m.preset == "bert-large") continue;
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : {30, 50}) {
      const int64_t budget = w->peak_bytes * b / 100;
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* single,
                                 Cached(Policy::kSlackSwap, *w, b));
      for (int gpus : {1, 2, 4, 8}) {
        Hardware shared = w->hardware;
        shared.gpus_per_uplink = gpus;
        shared.uplink_d2h_bytes_per_second = kUplink;
        shared.uplink_h2d_bytes_per_second = kUplink;
        Hardware derated = w->hardware;
        const double factor = 1 + std::log2(static_cast<double>(gpus));
        derated.d2h_bytes_per_second = static_cast<int64_t>(
            static_cast<double>(derated.d2h_bytes_per_second) / factor);
        derated.h2d_bytes_per_second = static_cast<int64_t>(
            static_cast<double>(derated.h2d_bytes_per_second) / factor);
        // Every plan judged in the shared model.
        auto judged =
            [&](const PlanningResult& planned) -> absl::StatusOr<std::string> {
          if (!planned.feasible) return std::string("infeasible");
          SimulationOptions options;
          options.budget_bytes = budget;
          SLACKSWAP_ASSIGN_OR_RETURN(
              const SimulationResult r,
              Simulate(w->trace, shared, planned.plan, options));
          Check(r.peak_resident_bytes <= budget,
                absl::StrCat("over budget on a shared uplink: ", w->label));
          Cell cell;
          cell.result.replay = r;
          cell.result.feasible = r.feasible;
          return Pct(cell);
        };
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult for_derated,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             derated, budget, policy_options_));
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult for_shared,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             shared, budget, policy_options_));
        SLACKSWAP_ASSIGN_OR_RETURN(const std::string a, judged(single->result));
        SLACKSWAP_ASSIGN_OR_RETURN(const std::string d, judged(for_derated));
        SLACKSWAP_ASSIGN_OR_RETURN(const std::string c, judged(for_shared));
        absl::StrAppend(&md_, MarkdownRow({m.label, absl::StrCat(b, "%"),
                                           absl::StrCat(gpus), a, d, c}));
      }
    }
  }
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

absl::Status Report::Contention() {
  absl::StrAppend(&md_, report_text::kContentionIntro);
  for (const Model& m : models_) {
    for (const char* gpu : {"gh200", "h100"}) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, gpu));
      PolicyOptions contended = policy_options_;
      contended.physics.hbm_contention = true;
      for (int b : {30, 50}) {
        const int64_t budget = w->peak_bytes * b / 100;
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* without,
                                   Cached(Policy::kSlackSwap, *w, b));
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult with,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             w->hardware, budget, contended));
        std::vector<std::string> row = {m.label, gpu, absl::StrCat(b, "%")};
        if (!without->ok() || !with.feasible) {
          row.insert(row.end(), 5, "infeasible");
          absl::StrAppend(&md_, MarkdownRow(row));
          continue;
        }
        SimulationOptions options;
        options.budget_bytes = budget;
        options.physics = contended.physics;
        SLACKSWAP_ASSIGN_OR_RETURN(
            const SimulationResult on,
            Simulate(w->trace, w->hardware, without->result.plan, options));
        Check(with.replay.peak_resident_bytes <= budget,
              absl::StrCat("over budget with contention: ", w->label));
        row.push_back(Millis(without->result.replay.iteration_ns));
        row.push_back(Millis(on.iteration_ns));
        row.push_back(Millis(on.contention_ns));
        row.push_back(Millis(with.replay.iteration_ns));
        row.push_back(Millis(with.replay.contention_ns));
        absl::StrAppend(&md_, MarkdownRow(row));
      }
    }
  }
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
