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

// Csr::FromRows into `csr`, reusing its memory, driven by the caller: Count
// every item's row, Start, Place every item in order, Finish.
// O(items + the rows from the first with an item to the last), plus a fill
// of the others: the rows a schedule's items land in are one pass's (the
// forward copies' last forward uses, the backward pass's needs), and the
// running sum over every row was a fifth of a derivation.
class CsrBuilder {
 public:
  CsrBuilder(Csr& csr, int32_t rows) : csr_(csr), rows_(rows), first_(rows) {
    // Row r's count at index r + 2: after the prefix sums (Start), index
    // r + 1 is where row r's next item goes, and after the last is placed,
    // where row r + 1 begins.
    csr_.begin.assign(static_cast<size_t>(rows) + 2, 0);
  }
  void Count(int32_t row) {
    ++csr_.begin[row + 2];
    first_ = std::min(first_, row);
    last_ = std::max(last_, row);
  }
  void Start() {
    // (The running sum in a register: through the array, each addition
    // would wait for the store before it.) Before the first row with an
    // item every sum is 0 already; after the last, every one is the total.
    int32_t* const next = csr_.begin.data();
    int32_t sum = 0;
    for (int32_t i = first_ + 2; i <= last_ + 2; ++i) next[i] = sum += next[i];
    std::fill(next + last_ + 3, next + rows_ + 2, sum);
    csr_.items.resize(static_cast<size_t>(sum));
  }
  // Returns the item's position in csr.items.
  int32_t Place(int32_t row, int32_t item) {
    const int32_t position = csr_.begin[row + 1]++;
    csr_.items[position] = item;
    return position;
  }
  void Finish() { csr_.begin.resize(static_cast<size_t>(rows_) + 1); }

 private:
  Csr& csr_;
  const int32_t rows_;
  // The first and last rows counted (none: first_ > last_).
  int32_t first_;
  int32_t last_ = -1;
};

// Schedule::release_after_step, given the rebuilds (`rebuilt`: the
// recomputed tensors; `rebuild_step`: per recomputed tensor, its rebuild's
// step). Every tensor is freed after its last reader, operator or rebuild;
// each step's tensors by id. The rebuilds' inputs are visited from the
// rebuilds (a plan rebuilds few of the tensors whose rebuild reads another).
void DeriveReleases(const Trace& trace, absl::Span<const int32_t> rebuilt,
                    absl::Span<const int32_t> rebuild_step, Schedule& s) {
  const int32_t num_tensors = trace.num_tensors();
  std::vector<int32_t>& last_step = s.scratch.steps;
  last_step.resize(num_tensors);
  for (int32_t t = 0; t < num_tensors; ++t)
    last_step[t] = s.OpStep(trace.tensors[t].last_backward_use);
  for (const int32_t r : rebuilt) {
    const int32_t step = rebuild_step[r];
    for (const int32_t t : trace.recompute_inputs.Row(r))
      last_step[t] = std::max(last_step[t], step);
  }
  CsrBuilder releases(s.release_after_step, s.num_steps);
  for (int32_t t = 0; t < num_tensors; ++t) releases.Count(last_step[t]);
  releases.Start();
  for (int32_t t = 0; t < num_tensors; ++t) releases.Place(last_step[t], t);
  releases.Finish();
}

// Schedule::prefetches_needed, from the swapped tensors' backward readers
// and the rebuilds' inputs (an operator's reads of kept and rebuilt tensors
// need nothing; `uses` lists each tensor's readers ascending, so its
// backward ones are a suffix).
void DerivePrefetchesNeeded(const Trace& trace,
                            absl::Span<const int32_t> swapped,
                            absl::Span<const int32_t> rebuilt,
                            absl::Span<const int32_t> rebuild_step,
                            Schedule& s) {
  s.prefetches_needed.assign(s.num_steps, 0);
  int32_t* const needed = s.prefetches_needed.data();
  const int32_t first_backward = trace.num_forward_ops;
  for (const int32_t t : swapped) {
    const int32_t rank = s.prefetch_rank[t] + 1;
    const absl::Span<const int32_t> readers = trace.uses.Row(t);
    for (size_t i = readers.size(); i-- > 0 && readers[i] >= first_backward;) {
      int32_t& step_needed = needed[s.OpStep(readers[i])];
      step_needed = std::max(step_needed, rank);
    }
  }
  // 1 + the rank of a swapped input, 0 for any other (ranked -1).
  for (const int32_t r : rebuilt) {
    int32_t rebuild_needed = 0;
    for (const int32_t t : trace.recompute_inputs.Row(r))
      rebuild_needed = std::max(rebuild_needed, s.prefetch_rank[t] + 1);
    needed[rebuild_step[r]] = rebuild_needed;
  }
}

// DeriveSchedule after the needs (s.need_op, DeriveNeeds) are in place.
void DeriveFromNeeds(const Trace& trace, const Plan& plan, Schedule& s) {
  const int32_t num_tensors = trace.num_tensors();
  const int32_t num_ops = trace.num_ops();
  const auto& decisions = plan.decisions;
  const std::vector<int32_t>& need = s.need_op;

  // D2H order: production order. Tensors are visited by producer via the
  // `produces` relation, which lists each op's tensors in id order.
  s.offload_order.resize(num_tensors);
  size_t offloads = 0;
  for (int32_t o = 0; o < trace.num_forward_ops; ++o) {
    for (int32_t t : trace.produces.Row(o)) {
      s.offload_order[offloads] = t;
      offloads += decisions[t] == Decision::kSwap ? 1 : 0;
    }
  }
  s.offload_order.resize(offloads);

  // The swapped, rebuilt and not kept tensors, each ascending: appended
  // without a branch (a plan's decisions follow no pattern a branch could
  // predict), so that the loops below need none.
  std::vector<int32_t>& swapped = s.scratch.swapped;
  std::vector<int32_t>& rebuilt = s.scratch.rebuilt;
  std::vector<int32_t>& dropped = s.scratch.dropped;
  swapped.resize(num_tensors);
  rebuilt.resize(num_tensors);
  dropped.resize(num_tensors);
  size_t swaps = 0, rebuilds_count = 0, drops = 0;
  for (int32_t t = 0; t < num_tensors; ++t) {
    const Decision d = decisions[t];
    swapped[swaps] = t;
    swaps += d == Decision::kSwap ? 1 : 0;
    rebuilt[rebuilds_count] = t;
    rebuilds_count += d == Decision::kRecompute ? 1 : 0;
    dropped[drops] = t;
    drops += d != Decision::kKeep ? 1 : 0;
  }

  // H2D order: swapped tensors by need (earliest deadline first), ties by
  // id.
  CsrBuilder prefetches(s.scratch.prefetch_rows, num_ops);
  for (size_t i = 0; i < swaps; ++i) prefetches.Count(need[swapped[i]]);
  prefetches.Start();
  s.prefetch_rank.assign(num_tensors, -1);
  for (size_t i = 0; i < swaps; ++i) {
    const int32_t t = swapped[i];
    s.prefetch_rank[t] = prefetches.Place(need[t], t);
  }
  prefetches.Finish();
  s.prefetch_order.swap(s.scratch.prefetch_rows.items);

  // The forward copy of what is not kept is freed after its last forward
  // use.
  CsrBuilder forward(s.forward_release_after_op, num_ops);
  for (size_t i = 0; i < drops; ++i)
    forward.Count(trace.tensors[dropped[i]].last_forward_use);
  forward.Start();
  for (size_t i = 0; i < drops; ++i) {
    const int32_t t = dropped[i];
    forward.Place(trace.tensors[t].last_forward_use, t);
  }
  forward.Finish();

  // Rebuilds by need, inputs first; rebuild k before op o is step o + k.
  CsrBuilder rebuilds(s.rebuilds, num_ops);
  for (size_t i = 0; i < rebuilds_count; ++i) rebuilds.Count(need[rebuilt[i]]);
  rebuilds.Start();
  std::vector<int32_t>& rebuild_step = s.scratch.rows;
  rebuild_step.resize(num_tensors);  // (meaningful for rebuilt tensors)
  // (In topological order, gathered without a branch as above.)
  std::vector<int32_t>& inputs_first = s.scratch.dropped;  // (done with)
  size_t gathered = 0;
  for (const int32_t t : trace.recompute_topological_order) {
    inputs_first[gathered] = t;
    gathered += decisions[t] == Decision::kRecompute ? 1 : 0;
  }
  for (size_t i = 0; i < gathered; ++i) {
    const int32_t t = inputs_first[i];
    rebuild_step[t] = need[t] + rebuilds.Place(need[t], t);
  }
  rebuilds.Finish();
  s.num_steps = num_ops + static_cast<int32_t>(s.rebuilds.items.size());
  const absl::Span<const int32_t> swapped_tensors(swapped.data(), swaps);
  const absl::Span<const int32_t> rebuilt_tensors(rebuilt.data(),
                                                  rebuilds_count);
  DeriveReleases(trace, rebuilt_tensors, rebuild_step, s);
  DerivePrefetchesNeeded(trace, swapped_tensors, rebuilt_tensors, rebuild_step,
                         s);
  if (!trace.fixed_transfers.empty()) {
    MergeFixedTransfers(trace, s);
  } else {
    s.fixed_h2d_needed.clear();
    s.fixed_d2h_needed.clear();
    s.fixed_sources.begin.assign(1, 0);
    s.fixed_sources.items.clear();
  }
}

}  // namespace

void DeriveNeeds(const Trace& trace, absl::Span<const Decision> decisions,
                 std::vector<int32_t>& need) {
  need.resize(trace.tensors.size());
  int32_t* const needs = need.data();
  const Decision* const decided = decisions.data();
  const auto& order = trace.recompute_topological_order;
  // Dependents come after their inputs in `order`, so walking it backwards
  // sees every dependent's need before the input's. Every tensor's need is
  // worked out, and -1 stored for those kept by a mask (all ones or zero):
  // the plan's decisions follow no pattern a branch could predict, and
  // compilers turn a plain select into a branch. (A rebuilt dependent, the
  // rarer case, is still a branch: reading every dependent's need would
  // chain each tensor's to the one stored just before.)
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int32_t t = *it;
    int32_t n = trace.tensors[t].first_backward_use;
    for (int32_t r : trace.recompute_dependents.Row(t)) {
      if (decided[r] == Decision::kRecompute) n = std::min(n, needs[r]);
    }
    needs[t] = n | -static_cast<int32_t>(decided[t] == Decision::kKeep);
  }
}

std::vector<int32_t> DeriveNeeds(const Trace& trace,
                                 absl::Span<const Decision> decisions) {
  std::vector<int32_t> need;
  DeriveNeeds(trace, decisions, need);
  return need;
}

Schedule DeriveSchedule(const Trace& trace, const Plan& plan) {
  Schedule s;
  DeriveSchedule(trace, plan, s);
  return s;
}

void DeriveSchedule(const Trace& trace, const Plan& plan, Schedule& s) {
  DeriveNeeds(trace, plan.decisions, s.need_op);
  DeriveFromNeeds(trace, plan, s);
}

void DeriveSchedule(const Trace& trace, const Plan& plan, Schedule& s,
                    std::vector<int32_t>& need) {
  s.need_op.swap(need);
  DeriveFromNeeds(trace, plan, s);
}

}  // namespace slackswap
