// File: small_traces.h
//
// Random small traces, for judging planners against the exact optimum
// (planner/optimum.h): a few forward and backward operators in blocks, an
// optional optimizer step, and up to about ten saved tensors with odd sizes
// (zero bytes included), zero durations, shared recompute inputs, forbidden
// decisions and workspaces, on a random host link. Every trace is valid
// (ValidateTrace accepts it). The same seed gives the same trace and link on
// every machine: the generator draws from its own 64-bit generator, not from
// the standard library's distributions.
#ifndef SLACKSWAP_SIMULATOR_SMALL_TRACES_H_
#define SLACKSWAP_SIMULATOR_SMALL_TRACES_H_

#include <cstdint>

#include "simulator/hardware.h"
#include "simulator/trace_spec.h"

namespace slackswap {

struct SmallTraceOptions {
  int32_t min_tensors = 2;
  int32_t max_tensors = 9;
  int32_t max_forward_ops = 10;
};

struct SmallTrace {
  TraceSpec trace;
  Hardware hardware;
};

SmallTrace RandomSmallTrace(uint64_t seed,
                            const SmallTraceOptions& options = {});

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SMALL_TRACES_H_
