// DeriveSchedule against a plain derivation written from schedule.h's
// definitions, on random plans for medium traces of every shape: the fast
// derivation visits only the rows, readers and rebuild inputs that can hold
// something, and must still give every array exactly.
#include "simulator/schedule.h"

#include <algorithm>
#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "simulator/medium_traces.h"
#include "simulator/trace_validation.h"
#include "tests/simulator/random_plans.h"

namespace slackswap {
namespace {

// Rows of (row, item) pairs, each row's items in the order given.
std::vector<std::vector<int32_t>> Rows(const Csr& csr) {
  std::vector<std::vector<int32_t>> rows(csr.begin.size() - 1);
  for (size_t r = 0; r + 1 < csr.begin.size(); ++r) {
    const absl::Span<const int32_t> row = csr.Row(static_cast<int32_t>(r));
    rows[r].assign(row.begin(), row.end());
  }
  return rows;
}

// The schedule of a plan for a trace without fixed transfers, one definition
// at a time, every operator and tensor visited.
struct Reference {
  std::vector<int32_t> offload_order, prefetch_order, prefetch_rank;
  std::vector<std::vector<int32_t>> rebuilds, releases, forward_releases;
  std::vector<int32_t> prefetches_needed;
  int32_t num_steps = 0;
};

Reference Derive(const Trace& trace, const Plan& plan,
                 const std::vector<int32_t>& need) {
  const int32_t n = trace.num_tensors();
  const int32_t ops = trace.num_ops();
  const auto is = [&](int32_t t, Decision d) { return plan.decisions[t] == d; };
  Reference ref;
  for (int32_t o = 0; o < ops; ++o) {
    for (int32_t t = 0; t < n; ++t) {
      if (is(t, Decision::kSwap) && trace.tensors[t].producer_op == o)
        ref.offload_order.push_back(t);
    }
  }
  std::vector<std::pair<int32_t, int32_t>> by_need;
  for (int32_t t = 0; t < n; ++t) {
    if (is(t, Decision::kSwap)) by_need.emplace_back(need[t], t);
  }
  std::sort(by_need.begin(), by_need.end());
  ref.prefetch_rank.assign(n, -1);
  for (const auto& [row, t] : by_need) {
    ref.prefetch_rank[t] = static_cast<int32_t>(ref.prefetch_order.size());
    ref.prefetch_order.push_back(t);
  }
  // Rebuilds before each op: inputs before dependents (topological order).
  ref.rebuilds.assign(ops, {});
  for (const int32_t t : trace.recompute_topological_order) {
    if (is(t, Decision::kRecompute)) ref.rebuilds[need[t]].push_back(t);
  }
  std::vector<int32_t> op_step(ops), rebuild_step(n, -1);
  int32_t step = 0;
  for (int32_t o = 0; o < ops; ++o) {
    for (const int32_t t : ref.rebuilds[o]) rebuild_step[t] = step++;
    op_step[o] = step++;
  }
  ref.num_steps = step;
  ref.releases.assign(step, {});
  ref.prefetches_needed.assign(step, 0);
  for (int32_t t = 0; t < n; ++t) {
    int32_t last = op_step[trace.tensors[t].last_backward_use];
    for (int32_t r = 0; r < n; ++r) {
      const absl::Span<const int32_t> inputs = trace.recompute_inputs.Row(r);
      if (is(r, Decision::kRecompute) &&
          std::find(inputs.begin(), inputs.end(), t) != inputs.end()) {
        last = std::max(last, rebuild_step[r]);
      }
    }
    ref.releases[last].push_back(t);
  }
  ref.forward_releases.assign(ops, {});
  for (int32_t t = 0; t < n; ++t) {
    if (!is(t, Decision::kKeep))
      ref.forward_releases[trace.tensors[t].last_forward_use].push_back(t);
  }
  const auto needed = [&](absl::Span<const int32_t> reads) {
    int32_t most = 0;
    for (const int32_t t : reads)
      most = std::max(most, ref.prefetch_rank[t] + 1);
    return most;
  };
  for (int32_t o = trace.num_forward_ops; o < ops; ++o)
    ref.prefetches_needed[op_step[o]] = needed(trace.reads.Row(o));
  for (int32_t t = 0; t < n; ++t) {
    if (is(t, Decision::kRecompute))
      ref.prefetches_needed[rebuild_step[t]] =
          needed(trace.recompute_inputs.Row(t));
  }
  return ref;
}

TEST(ScheduleTest, EveryArrayIsAsItsDefinitionSays) {
  std::mt19937_64 rng(17);
  int checked = 0;
  for (const MediumShape shape :
       {MediumShape::kChain, MediumShape::kBranches, MediumShape::kDag}) {
    for (uint64_t seed = 1; seed <= 6; ++seed) {
      MediumTraceOptions options;
      options.shape = shape;
      const Trace trace =
          *ValidateTrace(RandomMediumTrace(seed, options).trace);
      Schedule reused;  // (derived into again and again, as searches do)
      for (int k = 0; k < 12; ++k) {
        Plan plan = testing::RandomPlan(trace, /*barriers=*/false, rng);
        // Some plans keep, swap or rebuild nearly everything.
        if (k % 4 == 3) {
          const Decision d = static_cast<Decision>(k % 3);
          for (int32_t t = 0; t < trace.num_tensors(); ++t) {
            const Tensor& tensor = trace.tensors[t];
            if ((d == Decision::kSwap && tensor.swap_forbidden) ||
                (d == Decision::kRecompute && tensor.recompute_forbidden)) {
              continue;
            }
            plan.decisions[t] = d;
          }
        }
        const std::vector<int32_t> need = DeriveNeeds(trace, plan.decisions);
        const Reference ref = Derive(trace, plan, need);
        DeriveSchedule(trace, plan, reused);
        const Schedule fresh = DeriveSchedule(trace, plan);
        for (const Schedule* s : {&std::as_const(reused), &fresh}) {
          SCOPED_TRACE(::testing::Message()
                       << "shape " << static_cast<int>(shape) << " seed "
                       << seed << " plan " << k);
          EXPECT_EQ(s->need_op, need);
          EXPECT_EQ(s->num_steps, ref.num_steps);
          EXPECT_EQ(s->offload_order, ref.offload_order);
          EXPECT_EQ(s->prefetch_order, ref.prefetch_order);
          EXPECT_EQ(s->prefetch_rank, ref.prefetch_rank);
          EXPECT_EQ(Rows(s->rebuilds), ref.rebuilds);
          EXPECT_EQ(Rows(s->release_after_step), ref.releases);
          EXPECT_EQ(Rows(s->forward_release_after_op), ref.forward_releases);
          EXPECT_EQ(s->prefetches_needed, ref.prefetches_needed);
        }
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 3 * 6 * 12);
}

}  // namespace
}  // namespace slackswap
