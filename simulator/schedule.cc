#include "simulator/schedule.h"

#include <algorithm>

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

  // H2D order: earliest deadline first, ties by tensor id (Csr::FromRows
  // lists a row's items by id).
  std::vector<int32_t> row(num_tensors);
  for (int32_t t = 0; t < num_tensors; ++t)
    row[t] = decisions[t] == Decision::kSwap ? s.need_op[t] : -1;
  s.prefetch_order = Csr::FromRows(num_ops, row).items;
  s.prefetch_rank.assign(num_tensors, -1);
  for (size_t k = 0; k < s.prefetch_order.size(); ++k) {
    s.prefetch_rank[s.prefetch_order[k]] = static_cast<int32_t>(k);
  }

  // Rebuilds before their need, inputs first.
  for (int32_t t = 0; t < num_tensors; ++t)
    row[t] = decisions[t] == Decision::kRecompute ? s.need_op[t] : -1;
  s.rebuilds = Csr::FromRows(num_ops, row, trace.recompute_topological_order);
  s.num_steps = num_ops + static_cast<int32_t>(s.rebuilds.items.size());
  std::vector<int32_t> rebuild_step(num_tensors, -1);
  for (int32_t o = 0; o < num_ops; ++o) {
    for (int32_t k = s.rebuilds.begin[o]; k < s.rebuilds.begin[o + 1]; ++k) {
      rebuild_step[s.rebuilds.items[k]] = o + k;
    }
  }

  // Final release: after the last reader, operator or rebuild.
  for (int32_t t = 0; t < num_tensors; ++t) {
    int32_t last = s.OpStep(trace.tensors[t].last_backward_use);
    for (int32_t r : trace.recompute_dependents.Row(t)) {
      if (decisions[r] == Decision::kRecompute)
        last = std::max(last, rebuild_step[r]);
    }
    row[t] = last;
  }
  s.release_after_step = Csr::FromRows(s.num_steps, row);
  // The forward copy of what is not kept: after its last forward use.
  for (int32_t t = 0; t < num_tensors; ++t) {
    row[t] = decisions[t] != Decision::kKeep ? trace.tensors[t].last_forward_use
                                             : -1;
  }
  s.forward_release_after_op = Csr::FromRows(num_ops, row);

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
