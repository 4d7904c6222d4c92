#include "client/cli_flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "planner/planner_options.h"
#include "planner/policies.h"

ABSL_FLAG(std::string, preset, "gpt2-xl",
          "workload preset: bert-large, gpt2-xl, llama-7b, vgg16 (ignored with "
          "--trace)");
ABSL_FLAG(std::string, trace, "",
          "trace file (binary protobuf or JSON) instead of --preset");
ABSL_FLAG(
    std::string, hardware, "a100",
    "hardware preset (titan-x, v100, a100, h100, gh200) or a Hardware file "
    "(generate: presets only)");
ABSL_FLAG(int64_t, batch, 0, "batch size (0: the preset's)");
ABSL_FLAG(int64_t, seq, 0, "sequence length (0: the preset's)");
ABSL_FLAG(int32_t, layers, 0, "transformer layers (0: the preset's)");
ABSL_FLAG(std::string, precision, "",
          "bf16, fp16 or fp32 (empty: the preset's)");
ABSL_FLAG(std::string, attention, "", "flash or unfused (empty: the preset's)");
ABSL_FLAG(std::string, offload, "none",
          "host-link traffic the job makes itself, added to a generated "
          "trace: none, zero, zero-dpu or fsdp-cpu (docs/workloads.md)");
ABSL_FLAG(std::string, out, "",
          "generate: where to write the trace (.json: JSON, else binary)");
ABSL_FLAG(std::string, hardware_out, "",
          "generate: also write the hardware descriptor here");
ABSL_FLAG(std::string, budget, "1.0",
          "activation-memory budget: a fraction of the all-keep peak (0.5 or "
          "50%), bytes "
          "(123456, 20GB, 20GiB) or 'unlimited'");
ABSL_FLAG(std::string, policy, "ideal",
          "simulate: ideal (all keep; ignores --budget: memory unlimited), "
          "all-keep, or all-swap");
ABSL_FLAG(std::string, plan, "",
          "simulate: replay this plan file instead of --policy");
ABSL_FLAG(std::string, plan_out, "",
          "simulate, plan: write the plan, with its schedule (.json: JSON, "
          "else binary)");
ABSL_FLAG(std::string, report_out, "",
          "plan: write the whole report: the plan with its schedule, its "
          "outcome, and the metrics with the budget it was made for (.json: "
          "JSON, else binary); the Python Runtime takes it as it is");
ABSL_FLAG(bool, barriers, false,
          "simulate, plan: vDNN-style per-layer barriers");
ABSL_FLAG(bool, json, false, "print the result as JSON");
ABSL_FLAG(std::string, allocator, "none",
          "plan, simulate, compare, frontier: model PyTorch's CUDA caching "
          "allocator and report its peak reserved bytes: none, caching "
          "(native segments) or expandable (expandable_segments:True)");
ABSL_FLAG(int32_t, gpus_per_link, 0,
          "plan, simulate, compare, frontier: GPUs behind one host uplink, "
          "their ranks running the plan in lockstep (0: the hardware's; a "
          "DGX A100 has 2 per PCIe switch)");
ABSL_FLAG(double, uplink_gbps, 0,
          "plan, simulate, compare, frontier: the uplink's rate per "
          "direction, GB/s, shared by the transfers moving at each instant "
          "(0: the hardware's)");
ABSL_FLAG(bool, hbm_contention, false,
          "plan, simulate, compare, frontier: copies take HBM bandwidth from "
          "memory-bound operators");
ABSL_FLAG(int64_t, rank_skew_ns, 0,
          "plan, simulate, compare, frontier: rank r of --gpus_per_link "
          "starts r times this after rank 0");
ABSL_FLAG(std::string, jobs, "gpt2-xl:2:0.5,llama-7b:2:0.3",
          "node: the jobs, PRESET_OR_TRACE_FILE[:GPUS[:BUDGET]] each, "
          "comma-separated");
ABSL_FLAG(bool, budget_reserved, false,
          "plan, simulate, compare, frontier: the budget bounds the "
          "allocator's reserved bytes (needs --allocator)");
ABSL_FLAG(double, gap_target, 0.005,
          "plan, compare, frontier, node: the anytime search goes on while "
          "the plan is more than this fraction above the lower bound "
          "(docs/planner.md)");
ABSL_FLAG(
    double, search_ms, slackswap::PlannerOptions().search_time_ms,
    "plan, compare, frontier, node, study: the anytime search's limit, in "
    "ms counted as replays (the same plan on every machine); 0: no search");
ABSL_FLAG(bool, lp_bound, false,
          "plan, compare, frontier: also bound the iteration with the linear "
          "program (COIN-OR Clp) and report the larger bound");
ABSL_FLAG(
    std::string, timeline, "",
    "simulate: write the timeline here as Chrome trace-event JSON (Perfetto)");
ABSL_FLAG(std::string, timeline_name, "",
          "simulate: the timeline's process name (default: the policy or plan "
          "file, and the trace's name)");
ABSL_FLAG(double, guard, slackswap::PlannerOptions().guard_fraction,
          "plan: offloads must finish by (1 - guard) of the forward time, in "
          "[0, 0.9]");
ABSL_FLAG(std::string, ranking, "cost",
          "plan: swap candidates by recompute cost per byte ('cost') or "
          "'production' order");
ABSL_FLAG(bool, link_budget_pass, true,
          "plan: spend the link budget (false: recompute only)");
ABSL_FLAG(std::string, planner, "slackswap",
          "plan: the policy that plans (any name --policies accepts)");
ABSL_FLAG(std::string, budgets, "0.3,0.5,0.7",
          "compare: comma-separated budgets (as --budget)");
ABSL_FLAG(std::string, policies,
          "slackswap,vdnn,superneurons,swapadvisor,checkpointing",
          absl::StrCat("compare: comma-separated policies, of:",
                       slackswap::PolicyHelp()));
ABSL_FLAG(int64_t, genetic_evaluations, 10000,
          "compare, report, study: plans the genetic search replays (the "
          "optimality check)");
ABSL_FLAG(uint64_t, first_seed, 1001,
          "study: the seed of each kind's first trace (the next traces take "
          "the next seeds; docs/results.md section 15 uses 201)");
ABSL_FLAG(int32_t, traces_per_kind, 4, "study: traces of each kind");
ABSL_FLAG(std::string, kinds, "",
          "study: comma-separated kinds, of: chain, branches, dag, preset, "
          "small, uplink (empty: all)");
ABSL_FLAG(bool, references, true,
          "study: also the genetic search, SwapAdvisor, block checkpointing "
          "and the exact optimum (false: SlackSwap and its passes alone)");
ABSL_FLAG(double, target, 0,
          "frontier: throughput ratio to reach, in (0, 1] (0: none)");
ABSL_FLAG(std::string, fractions, "",
          "frontier: comma-separated budget fractions (empty: 0.10, 0.15, ..., "
          "1.00)");
ABSL_FLAG(bool, quick, false,
          "report: the short version (one reduced model, two budgets)");
ABSL_FLAG(std::string, out_dir, "docs",
          "report: where results.md and results/ go");
ABSL_FLAG(std::string, server, "",
          "send the request to a slackswap-server at this address (empty: "
          "in-process)");
ABSL_FLAG(std::string, tls_ca, "", "--server over TLS, trusting this CA (PEM)");
ABSL_FLAG(std::string, tls_cert, "",
          "--server: client certificate (PEM), for mutual TLS");
ABSL_FLAG(std::string, tls_key, "", "--server: client private key (PEM)");
ABSL_FLAG(std::string, tls_server_name, "",
          "--server: name to check on the server certificate");
ABSL_FLAG(absl::Duration, deadline, absl::Seconds(60),
          "deadline for each request");
ABSL_FLAG(int, concurrency, 4, "bench-server: concurrent callers");
ABSL_FLAG(absl::Duration, duration, absl::Seconds(10),
          "bench-server: how long to measure");
ABSL_FLAG(absl::Duration, warmup, absl::ZeroDuration(),
          "bench-server: run this long first, leaving those calls out of the "
          "report");
ABSL_FLAG(int64_t, requests, 0,
          "bench-server: stop after this many calls (0: --duration only)");
ABSL_FLAG(bool, local, false,
          "bench-server: call the planner in-process instead of --server");
ABSL_FLAG(int, planning_threads, 0,
          "bench-server --local: threads that plan the callers' calls in "
          "arrival order, as the server's do (0: one per usable CPU)");
ABSL_FLAG(int, server_pid, 0,
          "bench-server: the server's process id, when it runs on this "
          "machine: report its CPU time per call too");
