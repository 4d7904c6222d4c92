// File: physics.h
//
// What a replay models beyond one GPU's own link and the trace's durations:
// the node's physics (HBM contention, ranks that start skewed) and the
// caching allocator (docs/event-model.md). One home for every such setting:
// a request's Physics message (service/wire_convert.h) becomes this struct,
// which rides in SimulationOptions to every replay and, through the planners'
// options, to every replay a policy makes. The node's topology (GPUs behind
// one uplink, the uplink's rates) is the hardware's (hardware.h): a preset
// has it, a request's physics switches these on.
#ifndef SLACKSWAP_SIMULATOR_PHYSICS_H_
#define SLACKSWAP_SIMULATOR_PHYSICS_H_

#include <cstdint>

#include "simulator/caching_allocator.h"
#include "simulator/hardware.h"

namespace slackswap {

struct Physics {
  // HBM contention: while copies move bytes, an op with a memory-traffic
  // figure runs at the speed its roofline gives with the HBM bandwidth left
  // (needs the hardware's matmul and HBM rates).
  bool hbm_contention = false;
  // Rank r of the hardware's gpus_per_uplink ranks starts r * rank_skew_ns
  // after rank 0.
  int64_t rank_skew_ns = 0;
  // The caching allocator replayed over the allocations and frees
  // (caching_allocator.h); kNone: not modelled.
  AllocatorKind allocator = AllocatorKind::kNone;
  // With an allocator: the budget bounds the allocator's reserved bytes
  // instead of the resident bytes.
  bool budget_reserved = false;

  // The node part alone, without the allocator: what a policy's own replays
  // apply while it plans (the allocator is judged around it:
  // planner/allocator_budget.h).
  Physics NodeOnly() const {
    Physics node = *this;
    node.allocator = AllocatorKind::kNone;
    node.budget_reserved = false;
    return node;
  }
};

// Whether replays need the node model (rates that change at events).
inline bool UsesNodePhysics(const Hardware& hardware, const Physics& physics) {
  return physics.hbm_contention || hardware.SharesUplink();
}

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_PHYSICS_H_
