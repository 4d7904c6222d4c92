// File: cli_flags.h
//
// The slackswap command's flags, declared for the files of its commands
// (defined in cli_flags.cc; `slackswap --help` lists them).
#ifndef SLACKSWAP_CLIENT_CLI_FLAGS_H_
#define SLACKSWAP_CLIENT_CLI_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/time/time.h"

ABSL_DECLARE_FLAG(std::string, preset);
ABSL_DECLARE_FLAG(std::string, trace);
ABSL_DECLARE_FLAG(std::string, hardware);
ABSL_DECLARE_FLAG(int64_t, batch);
ABSL_DECLARE_FLAG(int64_t, seq);
ABSL_DECLARE_FLAG(int32_t, layers);
ABSL_DECLARE_FLAG(std::string, precision);
ABSL_DECLARE_FLAG(std::string, attention);
ABSL_DECLARE_FLAG(std::string, offload);
ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(std::string, hardware_out);
ABSL_DECLARE_FLAG(std::string, budget);
ABSL_DECLARE_FLAG(std::string, policy);
ABSL_DECLARE_FLAG(std::string, plan);
ABSL_DECLARE_FLAG(std::string, plan_out);
ABSL_DECLARE_FLAG(std::string, report_out);
ABSL_DECLARE_FLAG(bool, barriers);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(std::string, allocator);
ABSL_DECLARE_FLAG(bool, budget_reserved);
ABSL_DECLARE_FLAG(std::string, jobs);
ABSL_DECLARE_FLAG(int32_t, gpus_per_link);
ABSL_DECLARE_FLAG(double, uplink_gbps);
ABSL_DECLARE_FLAG(bool, hbm_contention);
ABSL_DECLARE_FLAG(int64_t, rank_skew_ns);
ABSL_DECLARE_FLAG(bool, lp_bound);
ABSL_DECLARE_FLAG(double, gap_target);
ABSL_DECLARE_FLAG(double, search_ms);
ABSL_DECLARE_FLAG(std::string, timeline);
ABSL_DECLARE_FLAG(std::string, timeline_name);
ABSL_DECLARE_FLAG(double, guard);
ABSL_DECLARE_FLAG(std::string, ranking);
ABSL_DECLARE_FLAG(bool, link_budget_pass);
ABSL_DECLARE_FLAG(std::string, planner);
ABSL_DECLARE_FLAG(std::string, budgets);
ABSL_DECLARE_FLAG(std::string, policies);
ABSL_DECLARE_FLAG(int64_t, genetic_evaluations);
ABSL_DECLARE_FLAG(uint64_t, first_seed);
ABSL_DECLARE_FLAG(int32_t, traces_per_kind);
ABSL_DECLARE_FLAG(std::string, kinds);
ABSL_DECLARE_FLAG(bool, references);
ABSL_DECLARE_FLAG(double, target);
ABSL_DECLARE_FLAG(std::string, fractions);
ABSL_DECLARE_FLAG(bool, quick);
ABSL_DECLARE_FLAG(std::string, out_dir);
ABSL_DECLARE_FLAG(std::string, server);
ABSL_DECLARE_FLAG(std::string, tls_ca);
ABSL_DECLARE_FLAG(std::string, tls_cert);
ABSL_DECLARE_FLAG(std::string, tls_key);
ABSL_DECLARE_FLAG(std::string, tls_server_name);
ABSL_DECLARE_FLAG(absl::Duration, deadline);
ABSL_DECLARE_FLAG(int, concurrency);
ABSL_DECLARE_FLAG(absl::Duration, duration);
ABSL_DECLARE_FLAG(absl::Duration, warmup);
ABSL_DECLARE_FLAG(int64_t, requests);
ABSL_DECLARE_FLAG(bool, local);
ABSL_DECLARE_FLAG(int, planning_threads);
ABSL_DECLARE_FLAG(int, server_pid);

#endif  // SLACKSWAP_CLIENT_CLI_FLAGS_H_
