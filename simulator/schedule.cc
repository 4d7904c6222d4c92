#include "simulator/schedule.h"

#include <algorithm>
#include <utility>

namespace slackswap {

std::vector<int32_t> DeriveNeeds(const Trace& trace,
                                 absl::Span<const Decision> decisions) {
  std::vector<int32_t> need(trace.tensors.size(), -1);
  const auto& order = trace.recompute_topological_order;
  // Dependents come after their inputs in `order`, so walking it backwards
  // sees every dependent's need before the input's.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t t = *it;
    if (decisions[t] == Decision::kKeep) continue;
    int32_t n = trace.tensors[t].first_backward_use;
    for (int32_t r : trace.recompute_dependents.Row(t)) {
      if (decisions[r] == Decision::kRecompute) n = std::min(n, need[r]);
    }
    need[t] = n;
  }
  return need;
}

Schedule DeriveSchedule(const Trace& trace, const Plan& plan) {
  const int32_t num_tensors = trace.num_tensors();
  const int32_t num_ops = trace.num_ops();
  const auto& decisions = plan.decisions;
  Schedule s;
  s.need_op = DeriveNeeds(trace, decisions);

  // D2H order: production order. Tensors are visited by producer via the
  // `produces` relation, which lists each op's tensors in id order.
  for (int32_t o = 0; o < trace.num_forward_ops; ++o) {
    for (int32_t t : trace.produces.Row(o)) {
      if (decisions[t] == Decision::kSwap) s.offload_order.push_back(t);
    }
  }

  // H2D order: earliest deadline first, ties by tensor id. Csr::FromPairs
  // is a stable counting sort: pairs listed by tensor id come out ordered by
  // (row, tensor id), here and below.
  std::vector<std::pair<int32_t, int32_t>> pairs;
  for (int32_t t = 0; t < num_tensors; ++t) {
    if (decisions[t] == Decision::kSwap) pairs.emplace_back(s.need_op[t], t);
  }
  s.prefetch_order = Csr::FromPairs(num_ops, pairs).items;
  s.prefetch_rank.assign(num_tensors, -1);
  for (size_t k = 0; k < s.prefetch_order.size(); ++k) {
    s.prefetch_rank[s.prefetch_order[k]] = static_cast<int32_t>(k);
  }

  // Rebuilds before their need, inputs first.
  pairs.clear();
  for (int32_t t : trace.recompute_topological_order) {
    if (decisions[t] == Decision::kRecompute)
      pairs.emplace_back(s.need_op[t], t);
  }
  s.rebuilds = Csr::FromPairs(num_ops, pairs);
  s.num_steps = num_ops + static_cast<int32_t>(s.rebuilds.items.size());
  std::vector<int32_t> rebuild_step(num_tensors, -1);
  for (int32_t o = 0; o < num_ops; ++o) {
    for (int32_t k = s.rebuilds.begin[o]; k < s.rebuilds.begin[o + 1]; ++k) {
      rebuild_step[s.rebuilds.items[k]] = o + k;
    }
  }

  // Final release: after the last reader, operator or rebuild.
  pairs.clear();
  std::vector<std::pair<int32_t, int32_t>> forward_pairs;
  for (int32_t t = 0; t < num_tensors; ++t) {
    const Tensor& tensor = trace.tensors[t];
    int32_t last = s.OpStep(tensor.last_backward_use);
    for (int32_t r : trace.recompute_dependents.Row(t)) {
      if (decisions[r] == Decision::kRecompute)
        last = std::max(last, rebuild_step[r]);
    }
    pairs.emplace_back(last, t);
    if (decisions[t] != Decision::kKeep)
      forward_pairs.emplace_back(tensor.last_forward_use, t);
  }
  s.release_after_step = Csr::FromPairs(s.num_steps, pairs);
  s.forward_release_after_op = Csr::FromPairs(num_ops, forward_pairs);

  // Inputs each step waits for.
  s.prefetches_needed.assign(s.num_steps, 0);
  for (int32_t o = trace.num_forward_ops; o < num_ops; ++o) {
    int32_t needed = 0;
    for (int32_t t : trace.reads.Row(o)) {
      if (decisions[t] == Decision::kSwap)
        needed = std::max(needed, s.prefetch_rank[t] + 1);
    }
    s.prefetches_needed[s.OpStep(o)] = needed;
    for (int32_t k = s.rebuilds.begin[o]; k < s.rebuilds.begin[o + 1]; ++k) {
      int32_t rebuild_needed = 0;
      for (int32_t t : trace.recompute_inputs.Row(s.rebuilds.items[k])) {
        if (decisions[t] == Decision::kSwap) {
          rebuild_needed = std::max(rebuild_needed, s.prefetch_rank[t] + 1);
        }
      }
      s.prefetches_needed[o + k] = rebuild_needed;
    }
  }
  return s;
}

}  // namespace slackswap
