// File: report.h
//
// The paper's evaluation, reproduced from nothing but the workload generator
// and the policies: `slackswap report` writes docs/results.md and the SVG
// figures under docs/results/, each table with the paper's figure beside
// ours, and checks its own invariants (SlackSwap at least as fast as every
// baseline; the lower bound below every plan).
#ifndef SLACKSWAP_CLIENT_REPORT_H_
#define SLACKSWAP_CLIENT_REPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace slackswap {

struct ReportOptions {
  // Where results.md and results/*.svg go.
  std::string out_dir = "docs";
  // One reduced model (GPT-2 XL with 8 layers), two budgets, short searches:
  // the test suite's version.
  bool quick = false;
  int64_t genetic_evaluations = 10000;
  int64_t swapadvisor_evaluations = 4000;
};

// Writes the report. FAILED_PRECONDITION naming the first violated invariant
// (after writing everything); other errors for I/O.
absl::Status WriteReport(const ReportOptions& options);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_REPORT_H_
