// slackswap: the command-line tool. Every subcommand runs in-process, or
// against a slackswap-server with --server ADDRESS, and prints the same
// output either way.
//
//   slackswap generate --preset gpt2-xl --hardware a100 --out trace.json
//   slackswap plan --trace trace.json --hardware a100 --budget 0.5
//   slackswap plan --server localhost:50051 --trace trace.json --budget 0.5
//
// Run `slackswap help` for every subcommand and flag.
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "base/build_info.h"
#include "base/malloc_tuning.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_inputs.h"
#include "client/cli_output.h"

namespace slackswap {
namespace {

constexpr char kUsage[] =
    R"(slackswap: activation-memory planning for deep-learning training

Usage:
  slackswap generate [--preset P] [--hardware H] [--batch N] [--seq N] [--layers N]
                     [--precision bf16|fp16|fp32] [--attention flash|unfused]
                     [--offload none|zero|zero-dpu|fsdp-cpu]
                     [--out FILE] [--hardware_out FILE]
      Build a trace from a model preset and print its summary. --offload adds
      the job's own host-link traffic (ZeRO-Offload, FSDP CPU offload); the
      other commands take the same flags with --preset.
  slackswap simulate [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                     [--policy ideal|all-keep|all-swap | --plan FILE] [--barriers]
                     [--json] [--plan_out FILE] [--timeline FILE [--timeline_name N]]
      Replay a plan in the event model and print its metrics.
  slackswap plan [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                 [--guard G] [--ranking cost|production] [--link_budget_pass=false]
                 [--barriers] [--planner POLICY] [--lp_bound] [--json] [--plan_out FILE]
                 [--report_out FILE]
      Plan (with SlackSwap unless --planner names another policy): decisions,
      predicted metrics, lower bound, planning time.
  slackswap optimum [--trace FILE | --preset P ...] [--hardware H] [--budget B]
                    [--json] [--plan_out FILE]
      The exact optimum over every decision and issue point (branch and bound;
      traces of at most 16 tensors), printed as plan prints it; an infeasible
      answer is a proof that no plan fits.
  slackswap compare [--trace FILE | --preset P ...] [--hardware H] [--budgets B,B,...]
                    [--policies P,P,...] [--genetic_evaluations N] [--json]
      Every policy at every budget, one table.
  slackswap frontier [--trace FILE | --preset P ...] [--hardware H] [--target R]
                     [--fractions F,F,...] [--json]
      Throughput against budget, and the smallest budget that reaches a target.
  slackswap node --jobs JOB,JOB,... [--hardware H] [--uplink_gbps G]
                 [--hbm_contention] [--allocator A] [--json]
      Plans jobs that share one node's host uplink together, where JOB is
      PRESET_OR_TRACE_FILE[:GPUS[:BUDGET]] (GPUS 1, BUDGET 0.5 by default):
      each job's plan and step alone and beside the others, and the slowdown
      each causes the others.
  slackswap bench-server (--server ADDRESS [--server_pid PID]
                          | --local [--planning_threads N])
                         [--concurrency N] [--duration D] [--warmup D]
                         [--requests N] [--preset P ...] [--budget B]
      N concurrent callers planning the same trace: requests/s, latency, errors,
      CPU time per call (of the server too, given its process id). In-process,
      planning threads take the calls in arrival order, as the server's do.
  slackswap report [--out_dir DIR] [--quick] [--genetic_evaluations N]
      Reproduce the paper's evaluation: DIR/results.md and DIR/results/*.svg.
  slackswap study [--first_seed N] [--traces_per_kind N] [--kinds K,K,...]
                  [--search_ms MS] [--genetic_evaluations N] [--references=false]
                  [--json]
      SlackSwap on traces drawn from seeds (deep chains, branched blocks,
      random DAGs, varied presets on every GPU, small traces, DAGs behind a
      shared uplink) at the proven floor and 2%, 10% and 30% above it, against
      the best plan of the genetic search seeded with its plan, SwapAdvisor,
      block checkpointing and the exact optimum: one row per cell, then the
      losses' median, p99 and worst.
  slackswap presets
      The hardware presets and each workload preset's calibration figures, as
      Markdown tables (docs/workloads.md is made from this output).
  slackswap help
      This text. `slackswap --help` lists every flag.

Every subcommand but report, study and presets runs in-process, or with --server ADDRESS
against a slackswap-server (with --tls_ca, --tls_cert, --tls_key, --deadline).

Exit status: 0 on success, 2 on a usage error, 1 on any other error.)";

}  // namespace
}  // namespace slackswap

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(slackswap::kUsage);
  // --version names the build, as slackswap-server's does; --helpfull lists
  // the flags with their defaults.
  slackswap::ConfigureFlagsUsage("slackswap", "client/");
  std::vector<char*> positional = slackswap::ParseFlags(argc, argv);
  slackswap::KeepFreedMemoryForReuse();
  if (positional.size() != 2) {
    std::cerr << slackswap::kUsage << "\n";
    return 2;
  }
  const std::string command = positional[1];
  if (command == "help") {
    std::cout << slackswap::kUsage << "\n";
    return 0;
  }
  if (command == "presets") return slackswap::Presets();
  if (command == "report") return slackswap::Report();
  if (command == "study") return slackswap::Study();
  using Command = int (*)(slackswap::Backend&);
  Command run = nullptr;
  if (command == "generate") run = slackswap::Generate;
  if (command == "simulate") run = slackswap::SimulateCommand;
  if (command == "plan") run = slackswap::PlanCommand;
  if (command == "optimum") {
    absl::SetFlag(&FLAGS_planner, std::string("optimum"));
    run = slackswap::PlanCommand;
  }
  if (command == "compare") run = slackswap::CompareCommand;
  if (command == "frontier") run = slackswap::FrontierCommand;
  if (command == "node") run = slackswap::NodeCommand;
  if (command == "bench-server") run = slackswap::BenchServer;
  if (run == nullptr) {
    std::cerr << "slackswap: unknown command '" << command.substr(0, 40)
              << "'; run 'slackswap help'\n";
    return 2;
  }
  absl::StatusOr<std::unique_ptr<slackswap::Backend>> backend =
      slackswap::MakeBackend();
  if (!backend.ok()) return slackswap::ExitFor(backend.status(), 1);
  return run(**backend);
}
