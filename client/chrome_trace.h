// File: chrome_trace.h
//
// Exports a simulated timeline in the Chrome trace-event JSON format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. One process, named
// by the caller (its pid derived from the name, so that files opened
// together stay apart), with three threads: the compute stream (operators,
// rebuilds and stalls), the D2H stream (offloads) and the H2D stream
// (prefetches); counter tracks of resident bytes and of the budget.
// Every slice has a category ("op", "rebuild", "offload", "prefetch",
// "stall") and arguments: the operator's or tensor's index, its kind and
// phase or its bytes, the resident bytes, and for a stall its cause and the
// operator that waited. Timestamps are microseconds with nanosecond
// precision.
//
// client/python/slackswap_client/timeline.py writes the same bytes from
// Python (tests/server/e2e_test.py compares them).
#ifndef SLACKSWAP_CLIENT_CHROME_TRACE_H_
#define SLACKSWAP_CLIENT_CHROME_TRACE_H_

#include <cstdint>
#include <string>

#include "slackswap/v1/simulation.pb.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap {

// `timeline` and `metrics` must come from a simulation of `trace`. Event
// indices out of range are named by their index alone.
std::string ChromeTraceJson(const v1::Trace& trace,
                            const v1::Timeline& timeline,
                            const v1::Metrics& metrics,
                            const std::string& process_name);

// The process id for `process_name`: FNV-1a of its bytes, in [1, 2^31).
int64_t ChromeTraceProcessId(const std::string& process_name);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CHROME_TRACE_H_
