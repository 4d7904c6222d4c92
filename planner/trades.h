// File: trades.h
//
// The improvement step's trades (polish.h): two decisions exchanged at once,
// which no single change makes. Memory trades rebuild a kept tensor and keep
// rebuilt ones within its span; link trades swap a rebuilt tensor and
// rebuild swapped ones cheap to rebuild; room trades keep a swapped or
// rebuilt tensor and rebuild kept ones to make room for it.
#ifndef SLACKSWAP_PLANNER_TRADES_H_
#define SLACKSWAP_PLANNER_TRADES_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "simulator/plan.h"
#include "simulator/trace.h"

namespace slackswap {

// A trade: `tensor` takes decision `to` instead of `from`, and `others`,
// which had `to`, take `others_to`: changes no single one makes.
//   - Memory trades (from kKeep, to kRecompute): a kept tensor rebuilt
//     instead, and rebuilt tensors kept whose span between last forward and
//     first backward use lies within its own, as many as its bytes cover,
//     the dearest per byte first. The forward copies resident at every op
//     are then no more bytes than before.
//   - Link trades (from kRecompute, to kSwap): a rebuilt tensor swapped
//     instead, and swapped tensors rebuilt, the cheapest to rebuild per byte
//     first (ties: the later tensor first), until their bytes cover its own.
//     The host link then carries no more bytes than before: the link budget
//     pass's rule (the link for the dearest rebuilds), which a plan repaired
//     and searched one change at a time can leave behind at a tight budget.
//   (Others take `from` in both.)
//   - Room trades (from kSwap or kRecompute, to kKeep; others to
//     kRecompute): a swapped or rebuilt tensor kept instead, where its bytes
//     would not fit, and kept tensors rebuilt, the cheapest per byte first,
//     each freeing bytes at an op where they are still short, until none
//     is: at each op between its last forward and first backward use, the
//     bytes resident at the least (RoomTrades) stay within the budget. Its
//     gain counts a swap's prefetch time (`h2d_ns`) as saved: where the
//     link is what the plan waits for, keeping the largest swap can save
//     more than any rebuild costs, and a plan searched one change at a
//     time cannot keep it (it does not fit).
// Either way the rebuilds (or the copies) take `gain_ns` less; the replay
// judges the rest (the new rebuilds' places and inputs, the prefetches
// around them).
struct Trade {
  int32_t tensor = -1;
  Decision from = Decision::kKeep;
  Decision to = Decision::kRecompute;
  std::vector<int32_t> others;
  Decision others_to = Decision::kKeep;
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

// `next` (a copy of `plan`) with `trade`'s decisions made, where its tensors
// still have the decisions it was made for (an earlier trade may have
// changed them) and every tensor it rebuilds keeps its rebuild chains within
// `limit` (ChainsFit, with `stamp` and `walk`); else false. Issue points are
// the caller's.
bool MakeTrade(const Trace& trace, const Plan& plan, const Trade& trade,
               int32_t limit, std::vector<uint32_t>& stamp, uint32_t& walk,
               Plan& next);

// The most link trades Trades offers: those of the largest gains. (The
// local search scans them once a call, where no single change improves its
// plan: polish.h.)
inline constexpr size_t kMaxLinkTrades = 8;

// The most room trades RoomTrades offers: those of the largest gains.
inline constexpr size_t kMaxRoomTrades = 8;

// The kinds of trade Trades offers.
struct TradeKinds {
  bool memory = false;
  bool link = false;
  // Room trades: under `budget_bytes`, `h2d_ns` each tensor's prefetch time.
  bool room = false;
  int64_t budget_bytes = 0;
  const std::vector<int64_t>* h2d_ns = nullptr;
};

// The trades of `kinds` that `plan` offers, the largest gain first (ties:
// memory, link, then room trades, each kind by its tensor's id).
std::vector<Trade> Trades(const Trace& trace, const Plan& plan,
                          const TradeKinds& kinds);

}  // namespace slackswap

#endif  // SLACKSWAP_PLANNER_TRADES_H_
