#include "client/report.h"

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
namespace {

struct Model {
  std::string preset;
  std::string label;
  double paper_at_50;  // SlackSwap's % of ideal at 50% in the paper
};

struct Workload {
  std::string label;
  std::vector<std::string> op_names;
  Trace trace;
  Hardware hardware;
  int64_t peak_bytes = 0;
  TraceSummary summary;
};

struct Cell {
  PlanningResult result;
  double seconds = 0;

  bool ok() const { return result.feasible; }
  double percent() const {
    return result.feasible
               ? 100.0 * static_cast<double>(result.replay.ideal_ns) /
                     static_cast<double>(result.replay.iteration_ns)
               : 0;
  }
};

const Policy kCompared[] = {Policy::kSlackSwap, Policy::kVdnn,
                            Policy::kSuperNeurons, Policy::kSwapAdvisor,
                            Policy::kCheckpointing};
const char* kComparedLabels[] = {"SlackSwap", "vDNN", "SuperNeurons",
                                 "SwapAdvisor", "Checkpointing"};

std::string Pct(const Cell& c) {
  return c.ok() ? absl::StrFormat("%.1f", c.percent()) : "infeasible";
}
// A paper figure as the paper writes it: `decimals` places, and "1,105"
// for thousands.
std::string Figure(double value, int decimals = 0) {
  std::string text = absl::StrFormat("%.*f", decimals, value);
  const size_t point = text.find('.');
  for (int i =
           static_cast<int>(point == std::string::npos ? text.size() : point) -
           3;
       i > 0; i -= 3) {
    text.insert(static_cast<size_t>(i), ",");
  }
  return text;
}
std::string Figure(paper::Range range, int decimals = 0) {
  return absl::StrCat(Figure(range.lo, decimals), "-",
                      Figure(range.hi, decimals));
}

class Report {
 public:
  explicit Report(const ReportOptions& options) : options_(options) {
    policy_options_.genetic_search.max_evaluations =
        options.genetic_evaluations;
    policy_options_.swapadvisor.max_evaluations =
        options.swapadvisor_evaluations;
    // The report bounds every plan with the linear program too.
    policy_options_.slackswap.linear_program_bound = true;
    if (options.quick) {
      models_ = {{"llama-7b", "Llama-7B (4 layers)", paper::kLlama7bAt50}};
      budgets_ = {30, 50};
    } else {
      models_ = {{"bert-large", "BERT-Large", paper::kBertLargeAt50},
                 {"gpt2-xl", "GPT-2 XL", paper::kGpt2XlAt50},
                 {"llama-7b", "Llama-7B", paper::kLlama7bAt50}};
      budgets_ = {30, 40, 50, 60, 70, 80, 90};
    }
  }

  absl::Status Run();

 private:
  absl::StatusOr<const Workload*> Get(const std::string& preset,
                                      const std::string& gpu, int64_t seq = 0,
                                      int64_t link_bytes_per_second = 0,
                                      int layers = 0);
  absl::StatusOr<Cell> RunCell(Policy policy, const Workload& w,
                               int budget_percent);
  absl::StatusOr<const Cell*> Cached(Policy policy, const Workload& w,
                                     int budget_percent);
  // The best baseline's cell (highest % of ideal), or nullptr if none fits.
  absl::StatusOr<const Cell*> BestBaseline(const Workload& w,
                                           int budget_percent,
                                           std::string* name);
  void Check(bool ok, const std::string& what) {
    if (!ok && violation_.empty()) violation_ = what;
  }
  absl::Status WriteFile(const std::string& name, const std::string& text);

  absl::Status Throughput();
  absl::Status WhereTimeGoes();
  absl::Status Ablations();
  absl::Status Optimality();
  absl::Status BoundGap();
  absl::Status SmallTraces();
  absl::Status Floors();
  absl::Status LinkSweep();
  absl::Status GpuSweep();
  absl::Status SequenceSweep();
  absl::Status Allocator();
  absl::Status Uplink();
  absl::Status Contention();
  absl::Status Speeds();
  absl::Status BeyondSmall();
  void Bars();

  const ReportOptions& options_;
  PolicyOptions policy_options_;
  std::vector<Model> models_;
  std::vector<int> budgets_;
  std::map<std::string, std::unique_ptr<Workload>> workloads_;
  std::map<std::tuple<const Workload*, Policy, int>, Cell> cells_;
  std::string md_;
  std::string violation_;
  std::string vgg_floor_;
  // Collected for the bars.
  std::vector<std::string> bars_;
};

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
        SLACKSWAP_ASSIGN_OR_RETURN(
            const SimulationResult observed,
            Simulate(w->trace, w->hardware, plain->result.plan,
                     AllocatorReplayOptions(budget, {kind, false}, false)));
        row.push_back(Gigabytes(observed.peak_reserved_bytes));
        row.push_back(Gigabytes(observed.fragmentation_bytes));
      }
      // Planned for the reserved budget.
      for (AllocatorKind kind : kKinds) {
        SLACKSWAP_ASSIGN_OR_RETURN(
            PlanningResult reserved,
            PlanUnderAllocator(w->trace, w->hardware, budget, {kind, true},
                               [&](int64_t resident_budget) {
                                 return RunPolicy(Policy::kSlackSwap, w->trace,
                                                  w->hardware, resident_budget,
                                                  policy_options_);
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
      Hardware contended = w->hardware;
      contended.hbm_contention = true;
      for (int b : {30, 50}) {
        const int64_t budget = w->peak_bytes * b / 100;
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* without,
                                   Cached(Policy::kSlackSwap, *w, b));
        SLACKSWAP_ASSIGN_OR_RETURN(
            const PlanningResult with,
            RunPolicy(Policy::kSlackSwap, w->trace, contended, budget,
                      policy_options_));
        std::vector<std::string> row = {m.label, gpu, absl::StrCat(b, "%")};
        if (!without->ok() || !with.feasible) {
          row.insert(row.end(), 5, "infeasible");
          absl::StrAppend(&md_, MarkdownRow(row));
          continue;
        }
        SimulationOptions options;
        options.budget_bytes = budget;
        SLACKSWAP_ASSIGN_OR_RETURN(
            const SimulationResult on,
            Simulate(w->trace, contended, without->result.plan, options));
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

absl::Status Report::Speeds() {
  absl::StrAppend(&md_, report_text::kSpeedsIntro);
  PolicyOptions fits_now = policy_options_;
  fits_now.slackswap.prefetch_admission = PrefetchAdmission::kFitsNow;
  // The passes alone under each rule: the anytime search (section 15) replays
  // by the any-speed rule only, and comes on top of either.
  fits_now.slackswap.search_time_ms = 0;
  PolicyOptions any_speed = policy_options_;
  any_speed.slackswap.search_time_ms = 0;
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
  const std::vector<std::pair<std::string, std::string>> models = {
      {"bert-large", "BERT-Large"},
      {"gpt2-xl", "GPT-2 XL"},
      {"llama-7b", "Llama-7B"},
      {"vgg16", "VGG-16"}};
  for (const auto& [preset, label] : models) {
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

  absl::StrAppend(&md_, report_text::kSpeedsRobustness);
  int robust_plans = 0, robust_replays = 0, old_deadlocks = 0;
  // The full presets on two GPUs at 30% and 50%, then two layers of each
  // transformer on the A100 at 40%, 60% and 80% (where the fits-now rule's
  // deadlocks show).
  struct Row {
    std::string preset, label, gpu;
    int layers;
    std::vector<int> budgets;
  };
  std::vector<Row> rows;
  for (const auto& [preset, label] : models) {
    if (preset == "vgg16") continue;
    for (const char* gpu : {"a100", "h100"})
      rows.push_back({preset, label, gpu, 0, {30, 50}});
  }
  for (const auto& [preset, label] : models) {
    if (preset == "vgg16") continue;
    rows.push_back({preset, label + " (2 layers)", "a100", 2, {40, 60, 80}});
  }
  for (const Row& spec : rows) {
    const std::string& label = spec.label;
    const char* gpu = spec.gpu.c_str();
    {
      SLACKSWAP_ASSIGN_OR_RETURN(const Workload* w,
                                 Get(spec.preset, gpu, 0, 0, spec.layers));
      for (int b : spec.budgets) {
        const int64_t budget = w->peak_bytes * b / 100;
        SLACKSWAP_ASSIGN_OR_RETURN(const Cell* now,
                                   Cached(Policy::kSlackSwap, *w, b));
        std::vector<std::string> row = {label, gpu, absl::StrCat(b, "%")};
        if (!now->ok()) {
          row.push_back("no plan");
          row.insert(row.end(), 6, "");
          absl::StrAppend(&md_, MarkdownRow(row));
          continue;
        }
        SimulationOptions options;
        options.budget_bytes = budget;
        const Schedule schedule = DeriveSchedule(w->trace, now->result.plan);
        const std::vector<ScaledReplay> scaled = ReplayAtScalings(
            w->trace, w->hardware, now->result.plan, schedule, options);
        row.push_back(absl::StrFormat(
            "%.1f%%", 100 * now->result.replay.throughput_ratio));
        double worst_ratio = now->result.replay.throughput_ratio;
        for (const ScaledReplay& r : scaled) {
          ++robust_replays;
          Check(r.replayed && r.feasible && r.peak_resident_bytes <= budget,
                absl::StrCat("SlackSwap's plan fails at another speed on ",
                             w->label, " at ", b, "%"));
          row.push_back(
              r.feasible ? absl::StrFormat("%.1f%%", 100 * r.throughput_ratio)
                         : "deadlock");
          worst_ratio = std::min(worst_ratio, r.throughput_ratio);
        }
        row.push_back(absl::StrFormat("%.1f%%", 100 * worst_ratio));
        ++robust_plans;
        // The plan made under the fits-now rule, replayed under it.
        SLACKSWAP_ASSIGN_OR_RETURN(const PlanningResult before,
                                   RunPolicy(Policy::kSlackSwap, w->trace,
                                             w->hardware, budget, fits_now));
        std::vector<std::string> deadlocks;
        if (before.feasible) {
          SimulationOptions old = options;
          old.prefetch_admission = PrefetchAdmission::kFitsNow;
          const Schedule old_schedule = DeriveSchedule(w->trace, before.plan);
          const std::vector<std::pair<std::string, SpeedScaling>> speeds = {
              {"link x0.5", {1, 0.5}},    {"link x2", {1, 2}},
              {"link x4", {1, 4}},        {"kernels x0.8", {0.8, 1}},
              {"kernels x1.2", {1.2, 1}}, {"kernels x2", {2, 1}}};
          for (const auto& [name, s] : speeds) {
            SLACKSWAP_ASSIGN_OR_RETURN(
                const Trace trace,
                ScaleDurations(w->trace, s.kernel_time_factor));
            const Hardware hw = ScaleLinks(w->hardware, s.link_speed_factor,
                                           s.link_speed_factor);
            const SimulationResult r =
                SimulateSchedule(trace, hw, before.plan, old_schedule, old);
            if (!r.feasible) deadlocks.push_back(name);
          }
        }
        old_deadlocks += deadlocks.empty() ? 0 : 1;
        row.push_back(deadlocks.empty() ? "none"
                                        : absl::StrJoin(deadlocks, ", "));
        absl::StrAppend(&md_, MarkdownRow(row));
      }
    }
  }
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "\nAll %d plans complete within their budgets in all %d scaled "
          "replays; %d of the fits-now rule's plans deadlock at one scaling "
          "or more.\n\n",
          robust_plans, robust_replays, old_deadlocks));
  return absl::OkStatus();
}

absl::Status Report::BeyondSmall() {
  absl::StrAppend(&md_, report_text::kBeyondSmallIntro);
  BeyondSmallOptions options;
  options.first_seed = 201;
  options.traces_per_kind = 4;
  SLACKSWAP_ASSIGN_OR_RETURN(const std::vector<BeyondSmallCell> cells,
                             RunBeyondSmallStudy(options));
  const auto percentile = [](std::vector<double> v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, static_cast<size_t>(q * v.size()))];
  };
  std::vector<double> all_losses;
  int all_no_plan = 0;
  double slowest = 0, optimum_worst = 0;
  std::vector<const BeyondSmallCell*> worst_cells;
  for (const std::string& kind : options.kinds) {
    std::vector<double> losses;
    int n = 0, no_plan = 0, no_plan_passes = 0, over1 = 0, over5 = 0;
    double kind_slowest = 0;
    for (const BeyondSmallCell& c : cells) {
      if (c.kind != kind) continue;
      ++n;
      const bool others = c.other_planned || c.optimum_planned;
      no_plan += c.slackswap != PlanOutcome::kPlanned && others;
      no_plan_passes += c.passes != PlanOutcome::kPlanned && others;
      Check(
          c.slackswap != PlanOutcome::kInfeasible,
          "SlackSwap answered INFEASIBLE above the proven floor on " + c.trace);
      kind_slowest = std::max(kind_slowest, c.slackswap_ms);
      if (c.slackswap != PlanOutcome::kPlanned) continue;
      const double loss = c.LossToBest();
      losses.push_back(loss);
      over1 += loss > 0.01;
      over5 += loss > 0.05;
      if (loss > 0.05) worst_cells.push_back(&c);
      if (c.optimum_planned) {
        optimum_worst =
            std::max(optimum_worst, static_cast<double>(c.slackswap_ns) /
                                            static_cast<double>(c.optimum_ns) -
                                        1);
      }
    }
    all_no_plan += no_plan;
    slowest = std::max(slowest, kind_slowest);
    all_losses.insert(all_losses.end(), losses.begin(), losses.end());
    absl::StrAppend(
        &md_,
        MarkdownRow({kind, absl::StrCat(n), absl::StrCat(no_plan_passes),
                     absl::StrCat(no_plan),
                     absl::StrFormat("%.2f%%", 100 * percentile(losses, 0.5)),
                     absl::StrFormat("%.2f%%", 100 * percentile(losses, 0.9)),
                     absl::StrFormat("%.2f%%", 100 * percentile(losses, 1.0)),
                     absl::StrCat(over1), absl::StrCat(over5),
                     absl::StrFormat("%.0f ms", kind_slowest)}));
  }
  const double p99 = percentile(all_losses, 0.99);
  const double worst = percentile(all_losses, 1.0);
  absl::StrAppend(
      &md_,
      absl::StrFormat(
          "\nIn all: %d cells; no plan where another search plans in %d; "
          "loss median %.2f%%, p99 %.2f%%, worst %.2f%%; on the small traces "
          "at most %.2f%% above the exact optimum; the slowest plan took "
          "%.0f ms.\n\n",
          static_cast<int>(cells.size()), all_no_plan,
          100 * percentile(all_losses, 0.5), 100 * p99, 100 * worst,
          100 * optimum_worst, slowest));
  if (!worst_cells.empty()) {
    absl::StrAppend(&md_,
                    "Cells more than 5% slower than the best plan found:\n\n"
                    "| Kind | Trace | Tensors | Hardware | Budget | SlackSwap "
                    "(ms) | Passes alone (ms) | Best (ms) | By | Loss |\n"
                    "|---|---|---|---|---|---|---|---|---|---|\n");
    for (const BeyondSmallCell* c : worst_cells) {
      const int64_t best =
          std::min(c->other_planned ? c->best_other_ns : c->slackswap_ns,
                   c->optimum_planned ? c->optimum_ns : c->slackswap_ns);
      absl::StrAppend(
          &md_,
          MarkdownRow({c->kind, c->trace, absl::StrCat(c->tensors), c->hardware,
                       c->level, Millis(c->slackswap_ns),
                       c->passes == PlanOutcome::kPlanned ? Millis(c->passes_ns)
                                                          : "no plan",
                       Millis(best), c->best_other,
                       absl::StrFormat("%.1f%%", 100 * c->LossToBest())}));
    }
    absl::StrAppend(&md_, "\n");
  }
  bars_.push_back(absl::StrFormat(
      "%s SlackSwap finds a plan above the proven floor wherever another "
      "search does (section 15): %d cells without",
      all_no_plan == 0 ? "MET" : "MISSED", all_no_plan));
  bars_.push_back(absl::StrFormat(
      "%s loss to the best plan any search finds, p99 at most 1%% and worst "
      "at most 5%% (section 15): p99 %.2f%%, worst %.2f%%",
      p99 <= 0.01 && worst <= 0.05 ? "MET" : "MISSED", 100 * p99, 100 * worst));
  bars_.push_back(absl::StrFormat(
      "%s small traces at most 1%% above the exact optimum (section 15): "
      "worst %.2f%%",
      optimum_worst <= 0.01 ? "MET" : "MISSED", 100 * optimum_worst));
  bars_.push_back(absl::StrFormat(
      "%s traces of up to 300 tensors planned in under 200 ms with the "
      "default limits (section 15): slowest %.0f ms",
      slowest < 200 ? "MET" : "MISSED", slowest));
  return absl::OkStatus();
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

}  // namespace

absl::Status WriteReport(const ReportOptions& options) {
  Report report(options);
  return report.Run();
}

}  // namespace slackswap
