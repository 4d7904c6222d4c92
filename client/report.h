// File: report.h
//
// The paper's evaluation, reproduced from nothing but the workload generator
// and the policies: `slackswap report` writes docs/results.md and the SVG
// figures under docs/results/, each table with the paper's figure beside
// ours (paper_figures.h; the prose is report_text.h), and checks its own
// invariants: SlackSwap at least as fast as every baseline in table 1, every
// plan within its budget, the lower bound below every plan, the genetic
// search never worse than its seed.
#ifndef SLACKSWAP_CLIENT_REPORT_H_
#define SLACKSWAP_CLIENT_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace slackswap {

struct ReportOptions {
  // Where results.md and results/*.svg go.
  std::string out_dir = "docs";
  // One reduced model (Llama-7B with 4 layers), two budgets (30% and 50%),
  // 12 small traces and no sweeps: the test suite's version.
  bool quick = false;
  int64_t genetic_evaluations = 10000;
  int64_t swapadvisor_evaluations = 4000;
};

// Writes the report. FAILED_PRECONDITION naming the first violated invariant
// (after writing everything); other errors for I/O.
absl::Status WriteReport(const ReportOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_REPORT_H_
