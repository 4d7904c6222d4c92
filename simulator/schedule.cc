#include "simulator/schedule.h"

#include <algorithm>
#include <utility>

namespace slackswap {
namespace {

// Merges the trace's fixed transfers into the copy streams' queues and the
// step requirements of a schedule derived for the tensors alone. The
// relative order of the tensors in each queue stays as it was.
void MergeFixedTransfers(const Trace& trace, Schedule& s) {
  const int32_t num_tensors = trace.num_tensors();
  const int32_t num_ops = trace.num_ops();
  const int32_t num_fixed = trace.num_fixed_transfers();
  const int32_t items = num_tensors + num_fixed;
  s.need_op.resize(items);
  for (int32_t f = 0; f < num_fixed; ++f) {
    const FixedTransfer& x = trace.fixed_transfers[f];
    s.need_op[num_tensors + f] = x.before_op >= 0 ? x.before_op : num_ops;
  }
  // Fixed transfers first at equal rows, then tensors, each by index.
  std::vector<int32_t> order(items);
  for (int32_t i = 0; i < num_fixed; ++i) order[i] = num_tensors + i;
  for (int32_t t = 0; t < num_tensors; ++t) order[num_fixed + t] = t;
  auto is = [&](int32_t f, Direction d) {
    return trace.fixed_transfers[f].direction == d;
  };

  // D2H: by the op after which an item may start (row = that op + 1).
  std::vector<int32_t> row(items, -1);
  for (int32_t t : s.offload_order) row[t] = trace.tensors[t].producer_op + 1;
  for (int32_t f = 0; f < num_fixed; ++f) {
    if (is(f, Direction::kD2H))
      row[num_tensors + f] = trace.fixed_transfers[f].after_op + 1;
  }
  s.offload_order = Csr::FromRows(num_ops + 1, row, order).items;

  // H2D: by need (row num_ops: no op waits).
  const std::vector<int32_t> tensor_order = std::move(s.prefetch_order);
  std::fill(row.begin(), row.end(), -1);
  for (int32_t t : tensor_order) row[t] = s.need_op[t];
  for (int32_t f = 0; f < num_fixed; ++f) {
    if (is(f, Direction::kH2D))
      row[num_tensors + f] = s.need_op[num_tensors + f];
  }
  s.prefetch_order = Csr::FromRows(num_ops + 1, row, order).items;
  s.prefetch_rank.assign(items, -1);
  for (size_t k = 0; k < s.prefetch_order.size(); ++k)
    s.prefetch_rank[s.prefetch_order[k]] = static_cast<int32_t>(k);

  // The tensors' requirements at their new ranks (the order among tensors
  // is unchanged, so the highest stays the highest), then the fixed
  // transfers' own at their before_op.
  for (int32_t& needed : s.prefetches_needed) {
    if (needed > 0) needed = s.prefetch_rank[tensor_order[needed - 1]] + 1;
  }
  s.fixed_h2d_needed.assign(s.num_steps, 0);
  s.fixed_d2h_needed.assign(s.num_steps, 0);
  std::vector<int32_t> d2h_position(items, -1);
  for (size_t k = 0; k < s.offload_order.size(); ++k)
    d2h_position[s.offload_order[k]] = static_cast<int32_t>(k);
  std::vector<std::pair<int32_t, int32_t>> releases;
  std::vector<std::pair<int32_t, int32_t>> sources;
  for (int32_t f = 0; f < num_fixed; ++f) {
    const FixedTransfer& x = trace.fixed_transfers[f];
    const int32_t item = num_tensors + f;
    if (x.direction == Direction::kD2H && x.gpu_bytes > 0)
      sources.emplace_back(x.after_op, item);
    if (x.direction == Direction::kH2D && x.gpu_bytes > 0)
      releases.emplace_back(s.OpStep(x.release_op), item);
    if (x.before_op < 0) continue;
    const int32_t step = s.OpStep(x.before_op);
    if (x.direction == Direction::kH2D) {
      const int32_t needed = s.prefetch_rank[item] + 1;
      s.fixed_h2d_needed[step] = std::max(s.fixed_h2d_needed[step], needed);
      s.prefetches_needed[step] = std::max(s.prefetches_needed[step], needed);
    } else {
      s.fixed_d2h_needed[step] =
          std::max(s.fixed_d2h_needed[step], d2h_position[item] + 1);
    }
  }
  s.fixed_sources = Csr::FromPairs(num_ops, sources);
  if (!releases.empty()) {
    std::vector<std::pair<int32_t, int32_t>> pairs;
    pairs.reserve(s.release_after_step.items.size() + releases.size());
    for (int32_t j = 0; j < s.num_steps; ++j) {
      for (int32_t t : s.release_after_step.Row(j)) pairs.emplace_back(j, t);
    }
    pairs.insert(pairs.end(), releases.begin(), releases.end());
    s.release_after_step = Csr::FromPairs(s.num_steps, pairs);
  }
}

}  // namespace

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
  if (!trace.fixed_transfers.empty()) MergeFixedTransfers(trace, s);
  return s;
}

}  // namespace slackswap
