// File: medium_traces.h
//
// Random traces of 20 to a few hundred tensors shaped like networks, for
// measuring planners beyond the small traces the exact optimum can solve
// (docs/results.md, section 15; tests/planner/beyond_small_test.cc): forward
// operators in blocks, each backward operator mirroring a forward one in
// reverse order at 1.5 to 2.5 times its duration, each forward operator
// producing one saved tensor that the operators reading it and their
// backward mirrors use, and rebuilt from its producer's inputs. Three shapes:
//   kChain:    each operator reads the one before (a deep chain);
//   kBranches: each block runs two to four chains side by side, joined at
//              its end (inception-like);
//   kDag:      each operator reads one to three tensors from the few before
//              it (branches and joins, skip connections).
// Operator kinds set the cost of a rebuild per byte, from cheap elementwise
// ones (about 1 ps per byte) to expensive matmuls (up to a few hundred), and
// the machine is a GPU preset's link, so that swapping, recomputing and
// keeping all have their place. The same seed and options give the same
// trace and machine on every machine (the generator draws from its own
// 64-bit generator).
#ifndef SLACKSWAP_SIMULATOR_MEDIUM_TRACES_H_
#define SLACKSWAP_SIMULATOR_MEDIUM_TRACES_H_

#include <cstdint>
#include <string>

#include "simulator/hardware.h"
#include "simulator/trace_spec.h"

namespace slackswap {

enum class MediumShape : uint8_t { kChain, kBranches, kDag };

// "chain", "branches", "dag".
const char* MediumShapeName(MediumShape shape);

struct MediumTraceOptions {
  MediumShape shape = MediumShape::kChain;
  int32_t min_tensors = 20;
  int32_t max_tensors = 300;
};

struct MediumTrace {
  TraceSpec trace;  // valid (ValidateTrace accepts it)
  Hardware hardware;
};

MediumTrace RandomMediumTrace(uint64_t seed,
                              const MediumTraceOptions& options = {});

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_MEDIUM_TRACES_H_
