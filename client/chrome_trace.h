// File: chrome_trace.h
//
// Exports a simulated timeline in the Chrome trace-event JSON format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. One process with three
// threads: the compute stream (operators and rebuilds), the D2H stream
// (offloads) and the H2D stream (prefetches), plus a counter track of resident
// bytes. Timestamps are microseconds with nanosecond precision.
#ifndef SLACKSWAP_CLIENT_CHROME_TRACE_H_
#define SLACKSWAP_CLIENT_CHROME_TRACE_H_

#include <cstdint>
#include <string>

#include "slackswap/v1/simulation.pb.h"
#include "slackswap/v1/trace.pb.h"

namespace slackswap {

// `timeline` must come from a simulation of `trace`. Event indices out of
// range are named by their index alone.
std::string ChromeTraceJson(const v1::Trace& trace,
                            const v1::Timeline& timeline, int64_t iteration_ns);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CHROME_TRACE_H_
