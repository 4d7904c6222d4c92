// File: report_internal.h
//
// What the sections of the evaluation report share (client/report/*.cc):
// the models and workloads it plans, its cells, and the Report class, one
// member function per section of docs/results.md. WriteReport (client/report.h)
// is the only entry point.
#ifndef SLACKSWAP_CLIENT_REPORT_REPORT_INTERNAL_H_
#define SLACKSWAP_CLIENT_REPORT_REPORT_INTERNAL_H_

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/paper_figures.h"
#include "client/report.h"
#include "planner/policies.h"
#include "simulator/workload.h"

namespace slackswap {
namespace report_internal {

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

inline constexpr Policy kCompared[] = {
    Policy::kSlackSwap, Policy::kVdnn, Policy::kSuperNeurons,
    Policy::kSwapAdvisor, Policy::kCheckpointing};
inline constexpr const char* kComparedLabels[] = {
    "SlackSwap", "vDNN", "SuperNeurons", "SwapAdvisor", "Checkpointing"};

inline std::string Pct(const Cell& c) {
  return c.ok() ? absl::StrFormat("%.1f", c.percent()) : "infeasible";
}
// A paper figure as the paper writes it: `decimals` places, and "1,105"
// for thousands.
inline std::string Figure(double value, int decimals = 0) {
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
inline std::string Figure(paper::Range range, int decimals = 0) {
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
  // Speeds' parts: the prefetch rules compared, and the plans replayed at
  // other speeds, a row per (workload, budget).
  struct RobustnessCounts {
    int plans = 0, replays = 0, old_deadlocks = 0;
  };
  absl::Status SpeedRules();
  absl::Status SpeedRobustness();
  absl::Status RobustnessRow(const Workload& w, const std::string& label,
                             const std::string& gpu, int budget_percent,
                             const PolicyOptions& fits_now,
                             RobustnessCounts& counts);
  absl::Status BeyondSmall();
  absl::Status OffloadTraffic();
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

}  // namespace report_internal
}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_REPORT_REPORT_INTERNAL_H_
