// File: chrome_trace.h
//
// Exports a simulated timeline in the Chrome trace-event JSON format, which
// Perfetto (ui.perfetto.dev) and chrome://tracing open. One process with three
// threads: the compute stream (operators and rebuilds), the D2H stream
// (offloads) and the H2D stream (prefetches), plus a counter track of resident
// bytes. Timestamps are microseconds with nanosecond precision.
#ifndef SLACKSWAP_CLIENT_CHROME_TRACE_H_
#define SLACKSWAP_CLIENT_CHROME_TRACE_H_

#include <string>

#include "simulator/event_model.h"
#include "simulator/trace.h"

namespace slackswap {

// `result` must come from a simulation of `trace` with record_timeline set.
std::string ChromeTraceJson(const Trace& trace, const SimulationResult& result);

}  // namespace slackswap

#endif  // SLACKSWAP_CLIENT_CHROME_TRACE_H_
