// File: cli_output.h
//
// What the slackswap command prints: exit statuses and error messages (one
// mapping for every command) and a plan's metrics; sizes and times are
// text_format.h's.
#ifndef SLACKSWAP_CLIENT_CLI_OUTPUT_H_
#define SLACKSWAP_CLIENT_CLI_OUTPUT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "client/cli_inputs.h"
#include "client/text_format.h"
#include "slackswap/v1/planning.pb.h"
#include "slackswap/v1/simulation.pb.h"

namespace slackswap {

// Exit status 2: the command line itself is wrong (unknown command, flag
// value or preset). Exit status 1: an input file is wrong or the work failed.
inline constexpr int kUsageExit = 2;
inline constexpr int kFailureExit = 1;

// Prints "slackswap: MESSAGE" (and every field violation when the status
// carries more than one) to stderr; returns `exit_code`.
int ExitFor(const absl::Status& status, int exit_code);

// "trace NAME; hardware HW; ideal T; all-keep peak B\n": the first line of
// compare and frontier. (Generated traces name their hardware preset too:
// the hardware is printed once, by name, whatever the trace is called.)
std::string WorkloadLine(const Inputs& in, int64_t ideal_ns,
                         int64_t all_keep_peak_bytes);

// A plan's outcome as the commands print it: "INFEASIBLE" (proven) or "NO
// PLAN FOUND" (not proven), or in lower case for tables.
std::string OutcomeWord(v1::PlanOutcome outcome, bool lower_case = false);

// The metrics block that simulate and plan print.
void PrintMetrics(const Inputs& in, const std::string& policy,
                  const v1::Metrics& m);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CLI_OUTPUT_H_
