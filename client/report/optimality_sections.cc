// How close to optimal: the genetic search, the bound's gap, small traces
// against the exact optimum, the floors.
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

absl::Status Report::Optimality() {
  absl::StrAppend(
      &md_, absl::StrReplaceAll(
                report_text::kOptimalityIntro,
                {
                    {"{search_gap}", Figure(paper::kGapToSearchPercent, 2)},
                    {"{search_plans}", Figure(paper::kSearchPlans)},
                    {"{planning_ms}", Figure(paper::kSlowestPlanMs)},
                }));
  double worst_gap = 0;
  int64_t fewest_plans = -1;
  double slowest_plan_ms = 0;
  for (const Model& m : models_) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : budgets_) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                 Cached(Policy::kSlackSwap, *w, b));
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ga,
                                 Cached(Policy::kGeneticSearch, *w, b));
      if (!ss->ok() || !ga->ok()) {
        absl::StrAppend(&md_, "| ", m.label, " | ", b,
                        "% | infeasible | | | | | | | |\n");
        continue;
      }
      const int64_t s = ss->result.replay.iteration_ns,
                    g = ga->result.replay.iteration_ns;
      const double gap =
          100.0 * static_cast<double>(s - g) / static_cast<double>(g);
      worst_gap = std::max(worst_gap, gap);
      const int64_t plans = ga->result.stats.plans_evaluated;
      fewest_plans = fewest_plans < 0 ? plans : std::min(fewest_plans, plans);
      slowest_plan_ms = std::max(slowest_plan_ms, 1e3 * ss->seconds);
      Check(g <= s,
            absl::StrCat("genetic search worse than its seed on ", m.label));
      absl::StrAppend(
          &md_, "| ", m.label, " | ", b, "% | ", MillisCell(s), " | ",
          MillisCell(g), " | ", absl::StrFormat("%.2f%%", gap), " | ", plans,
          " | ", MillisCell(ss->result.lower_bound.iteration_ns), " | ",
          absl::StrFormat("%.2f%%", 100 * ss->result.GapToLowerBound()), " | ",
          absl::StrFormat("%.1f ms", 1e3 * ss->seconds), " | ",
          absl::StrFormat("%.1f s", ga->seconds), " |\n");
    }
  }
  absl::StrAppend(&md_, "\n");
  if (options_.quick) return absl::OkStatus();
  bars_.push_back(absl::StrFormat(
      "%s SlackSwap within 0.5%% of the genetic search in every setup of table "
      "1 with at least "
      "10,000 plans searched: worst %.2f%%, fewest plans %d",
      worst_gap <= 0.5 && fewest_plans >= 10000 ? "MET" : "MISSED", worst_gap,
      fewest_plans));
  bars_.push_back(absl::StrFormat(
      "%s planning under %s ms (the paper's worst): slowest %.1f ms",
      slowest_plan_ms < paper::kSlowestPlanMs ? "MET" : "MISSED",
      Figure(paper::kSlowestPlanMs), slowest_plan_ms));
  return absl::OkStatus();
}

absl::Status Report::BoundGap() {
  absl::StrAppend(&md_, report_text::kBoundGapIntro);
  double worst = 0;
  std::string worst_at;
  const std::vector<int> budgets =
      options_.quick ? std::vector<int>{30, 50}
                     : std::vector<int>{20, 30, 40, 50, 60, 70, 80, 90};
  std::vector<Model> models = models_;
  if (!options_.quick) models.push_back({"vgg16", "VGG-16", 0});
  for (const Model& m : models) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    for (int b : budgets) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                 Cached(Policy::kSlackSwap, *w, b));
      if (!ss->ok()) {
        absl::StrAppend(&md_, "| ", m.label, " | ", b,
                        "% | no plan: below the floor (section 7) | | | |\n");
        continue;
      }
      const double gap = 100 * ss->result.GapToLowerBound();
      if (gap > worst) {
        worst = gap;
        worst_at = absl::StrCat(m.label, " at ", b, "%");
      }
      absl::StrAppend(
          &md_, "| ", m.label, " | ", b, "% | ",
          MillisCell(ss->result.replay.iteration_ns), " | ",
          MillisCell(ss->result.lower_bound.iteration_ns), " | ",
          ss->result.lower_bound.source == BoundSource::kLinearProgram
              ? "linear program"
              : "fast",
          " | ", absl::StrFormat("%.2f%%", gap), " |\n");
    }
  }
  absl::StrAppend(&md_, "\n");
  if (!options_.quick) {
    // Between the table's budgets too: every whole percent.
    int planned = 0, within = 0;
    double fine_worst = 0;
    std::string fine_worst_at;
    std::vector<std::string> above;
    for (const Model& m : models) {
      SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
      for (int b = 20; b <= 90; ++b) {
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* ss,
                                   Cached(Policy::kSlackSwap, *w, b));
        if (!ss->ok()) continue;
        ++planned;
        const double gap = 100 * ss->result.GapToLowerBound();
        if (gap <= 1.0) {
          ++within;
        } else {
          above.push_back(
              absl::StrFormat("%s at %d%% (%.2f%%)", m.label, b, gap));
        }
        if (gap > fine_worst) {
          fine_worst = gap;
          fine_worst_at = absl::StrCat(m.label, " at ", b, "%");
        }
      }
    }
    absl::StrAppend(
        &md_,
        absl::StrFormat(
            "At every whole percent from 20%% to 90%%, %d of the %d budgets "
            "with a plan are within 1%% of the bound; worst %.2f%% (%s).",
            within, planned, fine_worst, fine_worst_at));
    if (!above.empty()) {
      absl::StrAppend(&md_, " Above 1%: ", absl::StrJoin(above, ", "),
                      ". The bound looks at one op at a time: it sees neither "
                      "the backward link (just above a memory floor, plans "
                      "wait for their prefetches) nor that one set of whole "
                      "drops must serve every op at once.");
    }
    absl::StrAppend(&md_, "\n\n");
    bars_.push_back(absl::StrFormat(
        "%s SlackSwap within 1%% of the lower bound on the presets from 20%% "
        "to 90%%: worst %.2f%% (%s)",
        worst <= 1.0 ? "MET" : "MISSED", worst, worst_at));
  }
  return absl::OkStatus();
}

absl::Status Report::SmallTraces() {
  const int traces = options_.quick ? 12 : 300;
  absl::StrAppend(&md_,
                  absl::StrReplaceAll(report_text::kSmallTracesIntro,
                                      {{"{traces}", absl::StrCat(traces)}}));
  const std::vector<Policy> policies = {
      Policy::kSlackSwap, Policy::kVdnn, Policy::kSuperNeurons,
      Policy::kSwapAdvisor, Policy::kCheckpointing};
  PolicyOptions options = policy_options_;
  options.swapadvisor.max_evaluations = 400;
  SLACKSWAP_ASSIGN_OR_RETURN(OptimalityStudy study,
                             RunOptimalityStudy(1, traces, policies, options));
  int with_plan = 0, bound_false_infeasible = 0, bound_above = 0;
  std::vector<double> bound_gaps;
  for (const OptimalityCase& c : study.cases) {
    if (!c.optimum.feasible) continue;
    ++with_plan;
    if (!c.optimum.lower_bound.feasible) ++bound_false_infeasible;
    const LowerBound lp = ComputeLowerBound(
        *ValidateTrace(RandomSmallTrace(c.seed).trace),
        RandomSmallTrace(c.seed).hardware, c.budget_bytes, true);
    if (lp.iteration_ns > c.optimum.replay.iteration_ns) ++bound_above;
    bound_gaps.push_back(static_cast<double>(c.optimum.replay.iteration_ns) /
                             static_cast<double>(lp.iteration_ns) -
                         1);
  }
  auto quantile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  };
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "%zu cases, %d with a plan. The lower bound never called a budget "
          "with a plan infeasible (%d times) and never exceeded the optimum "
          "(%d times); the optimum lies above it by %.2f%% at the median and "
          "%.2f%% at p90.\n\n",
          study.cases.size(), with_plan, bound_false_infeasible, bound_above,
          100 * quantile(bound_gaps, 0.5), 100 * quantile(bound_gaps, 0.9)),
      "| Policy | Plans where the optimum plans | Wrongly infeasible | Median "
      "gap | p90 | p99 | Worst | Worst case |\n|---|---|---|---|---|---|---|"
      "---|\n");
  for (size_t i = 0; i < policies.size(); ++i) {
    int planned = 0, wrong = 0;
    std::vector<double> gaps;
    double worst = -1;
    std::string worst_case;
    for (const OptimalityCase& c : study.cases) {
      if (!c.optimum.feasible) continue;
      const PlanningResult& r = c.plans[i];
      if (!r.feasible) {
        ++wrong;
        continue;
      }
      ++planned;
      const double gap =
          static_cast<double>(r.replay.iteration_ns) /
              static_cast<double>(c.optimum.replay.iteration_ns) -
          1;
      gaps.push_back(gap);
      if (gap > worst) {
        worst = gap;
        worst_case = absl::StrCat("seed ", c.seed, " at ", c.label);
      }
    }
    absl::StrAppend(
        &md_, "| ", PolicyName(policies[i]), " | ", planned, " | ", wrong,
        " | ", absl::StrFormat("%.2f%%", 100 * quantile(gaps, 0.5)), " | ",
        absl::StrFormat("%.2f%%", 100 * quantile(gaps, 0.9)), " | ",
        absl::StrFormat("%.2f%%", 100 * quantile(gaps, 0.99)), " | ",
        absl::StrFormat("%.2f%%", 100 * std::max(0.0, worst)), " | ",
        worst > 0 ? worst_case : "none above 0.00%", " |\n");
    if (i == 0 && !options_.quick) {
      const double p99 = 100 * quantile(gaps, 0.99);
      const double top = 100 * std::max(0.0, worst);
      bars_.push_back(absl::StrFormat(
          "%s SlackSwap on small traces: never wrongly infeasible (%d times), "
          "gap to the optimum p99 %.2f%% (bar 1%%), worst %.2f%% (bar 5%%)",
          wrong == 0 && p99 <= 1 && top <= 5 ? "MET" : "MISSED", wrong, p99,
          top));
    }
    if (i == 0) {
      Check(wrong == 0, "SlackSwap infeasible where the optimum plans");
    }
  }
  Check(bound_false_infeasible == 0 && bound_above == 0,
        "lower bound above the optimum or wrongly infeasible");
  absl::StrAppend(&md_, "\n");
  return absl::OkStatus();
}

absl::Status Report::Floors() {
  absl::StrAppend(&md_, report_text::kFloorsIntro);
  std::vector<Model> models = models_;
  if (!options_.quick) models.push_back({"vgg16", "VGG-16", 0});
  for (const Model& m : models) {
    SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w, Get(m.preset, "a100"));
    const ProvenFloor floor = ComputeProvenFloor(w->trace);
    PlanningResult probe;
    probe.feasible = false;
    probe.replay.budget_bytes = floor.bytes - 1;
    SLACKSWAP_RETURN_IF_ERROR(ExplainInfeasible(
        w->trace, w->hardware, policy_options_.slackswap, probe));
    auto pct = [&](int64_t bytes) {
      return absl::StrFormat("%.1f%% (%s GB)",
                             100.0 * static_cast<double>(bytes) /
                                 static_cast<double>(w->peak_bytes),
                             GigabytesCell(bytes));
    };
    absl::StrAppend(&md_, "| ", m.label, " | ", pct(floor.bytes), " | op ",
                    floor.op, " (`", w->op_names[floor.op], "`) | ",
                    pct(probe.smallest_planned_budget_bytes), " |\n");
    if (m.preset == "vgg16") {
      // What the binding op holds: its workspace and the tensors resident
      // at its start in every plan.
      const Trace& t = w->trace;
      const Op& op = t.ops[floor.op];
      std::vector<std::string> held;
      for (const Tensor& x : t.tensors) {
        const bool forced =
            (x.producer_op <= floor.op && floor.op <= x.last_forward_use) ||
            (x.first_backward_use <= floor.op &&
             floor.op <= x.last_backward_use);
        if (forced && x.size_bytes >= floor.bytes / 20) {
          held.push_back(absl::StrCat(GigabytesCell(x.size_bytes),
                                      " GB produced by `",
                                      w->op_names[x.producer_op], "`"));
        }
      }
      vgg_floor_ = absl::StrCat(
          "VGG-16 has no plan below ", pct(floor.bytes),
          " of its all-keep peak: `", w->op_names[floor.op],
          "` must start with ", absl::StrJoin(held, ", "), " resident and ",
          GigabytesCell(op.workspace_bytes),
          " GB of workspace (the gradient it writes). Every plan holds them "
          "there: each is read by that op, or was needed by an earlier "
          "backward op and is still read by a later one, and the workspace "
          "is the op's own.");
    }
  }
  absl::StrAppend(&md_, "\n", vgg_floor_, vgg_floor_.empty() ? "" : "\n\n");
  return absl::OkStatus();
}

}  // namespace report_internal
}  // namespace slackswap
