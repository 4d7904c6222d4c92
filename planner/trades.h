// File: trades.h
//
// The improvement step's trades (polish.h): a kept tensor rebuilt instead,
// and rebuilt tensors kept instead whose span between last forward and first
// backward use lies within its own, a change no single change makes.
#ifndef SLACKSWAP_PLANNER_TRADES_H_
#define SLACKSWAP_PLANNER_TRADES_H_

#include <cstdint>
#include <vector>

#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// A trade: a kept tensor rebuilt instead, and rebuilt tensors kept instead
// whose span between last forward and first backward use lies within its
// own, as many as its bytes cover, the dearest per byte first. The forward
// copies resident at every op are then no more bytes than before, and the
// rebuilds take `gain_ns` less; the replay judges the rest (the new rebuild's
// place and inputs, the prefetches around it).
struct Trade {
  int32_t dropped = -1;
  std::vector<int32_t> kept;
  int64_t gain_ns = 0;
};

// Whether making t rebuilt under `decisions` (t already marked) keeps every
// rebuild chain through it within `limit` tensors: the most tensors one
// rebuild must rebuild, itself included (PlanDraft::RebuildChainSize), among
// t and the rebuilt tensors downstream of it. The walk is bounded: more than
// 4 x limit rebuilt tensors downstream count as too long. `stamp` (one per
// tensor, kept between calls) marks what a walk has seen.
bool ChainsFit(const Trace& trace, const std::vector<Decision>& decisions,
               int32_t t, int32_t limit, std::vector<uint32_t>& stamp,
               uint32_t& walk);

// The trades `plan` offers, the largest gain first (ties by the dropped
// tensor's id).
std::vector<Trade> Trades(const Trace& trace, const Plan& plan);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_TRADES_H_
