// File: cli_commands.h
//
// The slackswap command's subcommands, one family per file: generate and
// simulate (cli_simulate.cc); plan, optimum, compare and frontier
// (cli_plan.cc); bench-server (cli_bench.cc); presets and report
// (cli_report.cc); study (cli_study.cc). Each reads its flags (cli_flags.h) and
// returns the exit status (cli_output.h).
#ifndef SLACKSWAP_CLIENT_CLI_COMMANDS_H_
#define SLACKSWAP_CLIENT_CLI_COMMANDS_H_

#include "client/backend.h"

namespace slackswap {

int Generate(Backend& backend);
int SimulateCommand(Backend& backend);
int PlanCommand(Backend& backend);
int CompareCommand(Backend& backend);
int FrontierCommand(Backend& backend);
int NodeCommand(Backend& backend);
int BenchServer(Backend& backend);
int Presets();
int Report();
int Study();

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CLI_COMMANDS_H_
