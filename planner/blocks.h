// File: blocks.h
//
// The block structure the planners use: a forward block (a transformer layer,
// a conv stage) is the set of forward ops with one block index. Its body is
// the recomputable tensors it produces that no forward op of another block
// reads; the tensors other blocks read are its outputs (the next block's
// input), which block recomputation keeps.
#ifndef SLACKSWAP_PLANNER_BLOCKS_H_
#define SLACKSWAP_PLANNER_BLOCKS_H_

#include <cstdint>
#include <vector>

#include "simulator/trace.h"

namespace slackswap {

// Indexed by block index (0 .. max block index); blocks with no body are
// empty. Each body lists tensor ids ascending. O(tensors + uses).
std::vector<std::vector<int32_t>> BlockBodies(const Trace& trace);

// "Prefetch one layer ahead": the first op of the backward block run that
// precedes the run containing `need_op` (the run containing it, if it is the
// first backward run). `run_start` is BlockRunStarts(trace).
int32_t OneBlockAheadIssueOp(const Trace& trace,
                             const std::vector<int32_t>& run_start,
                             int32_t need_op);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_BLOCKS_H_
