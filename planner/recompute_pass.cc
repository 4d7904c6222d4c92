#include "planner/recompute_pass.h"

#include <algorithm>
#include <map>

#include "planner/link_budget_pass.h"

namespace slackswap {
namespace {

// How many eligible tensors one choice compares.
constexpr int kCandidatesCompared = 64;

}  // namespace

RecomputePass::RecomputePass(const Trace& trace, PlanDraft& draft,
                             StopPoll* stop)
    : trace_(trace), draft_(draft), stop_(stop) {
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (!trace.tensors[t].recompute_forbidden &&
        trace.tensors[t].size_bytes > 0) {
      by_cost_per_byte_.push_back(t);
    }
  }
  std::stable_sort(by_cost_per_byte_.begin(), by_cost_per_byte_.end(),
                   [&](int32_t a, int32_t b) {
                     return RecomputeCostPerByte(trace.tensors[a]) <
                            RecomputeCostPerByte(trace.tensors[b]);
                   });
  alive_next_.resize(by_cost_per_byte_.size() + 1);
  for (size_t i = 0; i < alive_next_.size(); ++i)
    alive_next_[i] = static_cast<int32_t>(i);
  alive_across_next_ = alive_next_;

  int32_t max_block = 0;
  for (const Op& op : trace.ops)
    max_block = std::max(max_block, op.block_index);
  block_tensors_.resize(static_cast<size_t>(max_block) + 1);
  for (int32_t t : trace.recompute_topological_order) {
    if (trace.tensors[t].recompute_forbidden) continue;
    block_tensors_[trace.ops[trace.tensors[t].producer_op].block_index]
        .push_back(t);
  }
  // Blocks with something to recompute, cheapest per byte first.
  std::vector<double> block_cost_per_byte(block_tensors_.size(), 0);
  for (size_t b = 0; b < block_tensors_.size(); ++b) {
    int64_t cost = 0, bytes = 0;
    for (int32_t t : block_tensors_[b]) {
      cost += trace.tensors[t].recompute_ns;
      bytes += trace.tensors[t].size_bytes;
    }
    if (bytes == 0) continue;
    block_cost_per_byte[b] =
        static_cast<double>(cost) / static_cast<double>(bytes);
    blocks_by_cost_.push_back(static_cast<int32_t>(b));
  }
  std::stable_sort(blocks_by_cost_.begin(), blocks_by_cost_.end(),
                   [&](int32_t a, int32_t b) {
                     return block_cost_per_byte[a] < block_cost_per_byte[b];
                   });
  alive_block_next_.resize(blocks_by_cost_.size() + 1);
  for (size_t i = 0; i < alive_block_next_.size(); ++i)
    alive_block_next_[i] = static_cast<int32_t>(i);
}

int32_t RecomputePass::FindAlive(std::vector<int32_t>& next, int32_t i) {
  int32_t root = i;
  while (next[root] != root) root = next[root];
  while (next[i] != root) {
    const int32_t following = next[i];
    next[i] = root;
    i = following;
  }
  return root;
}

int32_t RecomputePass::FindAliveBlock(int32_t i) {
  int32_t root = i;
  while (alive_block_next_[root] != root) root = alive_block_next_[root];
  while (alive_block_next_[i] != root) {
    const int32_t next = alive_block_next_[i];
    alive_block_next_[i] = root;
    i = next;
  }
  return root;
}

bool RecomputePass::StaysInBlock(int32_t t) const {
  const Tensor& tensor = trace_.tensors[t];
  // Rebuild chains stay inside a block: a chain through a block's input would
  // rebuild the blocks before it too.
  const int32_t block = trace_.ops[tensor.producer_op].block_index;
  auto other_block = [&](int32_t u) {
    return trace_.ops[trace_.tensors[u].producer_op].block_index != block;
  };
  for (int32_t input : trace_.recompute_inputs.Row(t)) {
    if (draft_.decision(input) == Decision::kRecompute && other_block(input))
      return false;
  }
  for (int32_t dependent : trace_.recompute_dependents.Row(t)) {
    if (draft_.decision(dependent) == Decision::kRecompute &&
        other_block(dependent))
      return false;
  }
  return true;
}

bool RecomputePass::BlockChainFits(int32_t block) {
  // The block's kept tensors may form a chain of their own, whatever its
  // size; with the recomputed tensors of other blocks that their rebuilds
  // must rebuild first, it may hold kMaxRebuildChain tensors.
  scratch_.clear();
  for (int32_t t : block_tensors_[block]) {
    if (draft_.decision(t) == Decision::kKeep) scratch_.push_back(t);
  }
  const int32_t limit =
      std::max(kMaxRebuildChain, static_cast<int32_t>(scratch_.size()));
  return draft_.RebuildChainSize(scratch_, limit) <= limit;
}

bool RecomputePass::ChainFits(int32_t t) const {
  return draft_.RebuildChainSize(t, kMaxRebuildChain) <= kMaxRebuildChain;
}

int32_t RecomputePass::BestTensor(int32_t op, int64_t excess_bytes,
                                  bool across_blocks) {
  const int32_t n = static_cast<int32_t>(by_cost_per_byte_.size());
  std::vector<int32_t>& alive =
      across_blocks ? alive_across_next_ : alive_next_;
  int32_t best = -1;
  double best_score = 0;
  int compared = 0;
  for (int32_t i = FindAlive(alive, 0); i < n && compared < kCandidatesCompared;
       i = FindAlive(alive, i + 1)) {
    const int32_t t = by_cost_per_byte_[i];
    // Recomputed or swapped, or (within blocks) tied to a recomputed tensor
    // of another block (the pass only adds recomputations): never a
    // candidate again.
    if (draft_.decision(t) != Decision::kKeep ||
        (!across_blocks && !StaysInBlock(t))) {
      alive[i] = i + 1;
      continue;
    }
    // Resident at the peak only because it is kept.
    const Tensor& tensor = trace_.tensors[t];
    if (!(tensor.last_forward_use < op && op < draft_.need(t))) continue;
    ++compared;
    const double score =
        static_cast<double>(tensor.recompute_ns) /
        static_cast<double>(std::min(tensor.size_bytes, excess_bytes));
    // The rebuild chain is walked only for a candidate that would win. One
    // whose chain is too long is not counted as compared, and never a
    // candidate again: chains only grow as the pass recomputes more.
    if (best < 0 || score < best_score) {
      if (!ChainFits(t)) {
        alive[i] = i + 1;
        --compared;
        continue;
      }
      best = t;
      best_score = score;
    }
  }
  return best;
}

bool RecomputePass::RecomputeBlock(int32_t op, PlannerStats& stats) {
  int32_t best_block = -1;
  double best_score = 0;
  const int32_t n = static_cast<int32_t>(blocks_by_cost_.size());
  int compared = 0;
  for (int32_t i = FindAliveBlock(0); i < n && compared < kCandidatesCompared;
       i = FindAliveBlock(i + 1)) {
    const int32_t b = blocks_by_cost_[i];
    int64_t cost = 0, freed = 0, kept = 0;
    for (int32_t t : block_tensors_[b]) {
      if (draft_.decision(t) != Decision::kKeep) continue;
      ++kept;
      cost += trace_.tensors[t].recompute_ns;
      const Tensor& tensor = trace_.tensors[t];
      if (tensor.last_forward_use < op && op < draft_.need(t))
        freed += tensor.size_bytes;
    }
    // Nothing left to recompute: never a candidate again.
    if (kept == 0) {
      alive_block_next_[i] = i + 1;
      continue;
    }
    if (freed == 0) continue;
    ++compared;
    const double score = static_cast<double>(cost) / static_cast<double>(freed);
    if (best_block < 0 || score < best_score) {
      // As for tensors: the chain is walked only for a would-be winner, and
      // one too long now stays too long (chains only grow).
      if (!BlockChainFits(b)) {
        alive_block_next_[i] = i + 1;
        --compared;
        continue;
      }
      best_block = b;
      best_score = score;
    }
  }
  if (best_block < 0) return false;
  const int64_t peak_before = draft_.PeakBytes();
  // Dependents first: each tensor's inputs are not recomputed yet when it is
  // marked, so no change walks the chain below it.
  std::vector<int32_t> changed;
  const std::vector<int32_t>& tensors = block_tensors_[best_block];
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (draft_.decision(*it) == Decision::kKeep) {
      draft_.SetRecompute(*it);
      changed.push_back(*it);
    }
  }
  if (draft_.PeakBytes() >= peak_before) {
    // The block's rebuilds land on the peak (or make a new one): undo,
    // inputs first.
    for (auto it = changed.rbegin(); it != changed.rend(); ++it)
      draft_.SetKeep(*it);
    return false;
  }
  stats.recomputes_marked += static_cast<int32_t>(changed.size());
  ++stats.blocks_recomputed;
  return true;
}

bool RecomputePass::RecomputeAt(int32_t op, int64_t excess_bytes,
                                PlannerStats& stats) {
  const int64_t excess = std::max<int64_t>(excess_bytes, 1);
  // Within blocks first; then a rebuild chain across a block boundary (kept
  // short) before a whole block.
  int32_t t = BestTensor(op, excess, /*across_blocks=*/false);
  if (t < 0) t = BestTensor(op, excess, /*across_blocks=*/true);
  if (t >= 0) {
    draft_.SetRecompute(t);
    ++stats.recomputes_marked;
    return true;
  }
  return RecomputeBlock(op, stats);
}

bool RecomputePass::Run(int64_t budget_bytes, PlannerStats& stats) {
  while (true) {
    const int64_t peak = draft_.PeakBytes();
    if (peak <= budget_bytes) return true;
    if (stop_ != nullptr && stop_->Stop()) return false;
    const int32_t op = draft_.PeakOp();
    if (!RecomputeAt(op, peak - budget_bytes, stats)) return false;
    // A block fallback that does not lower the peak (its rebuilds land on
    // it) would loop forever; so would any choice that raises it.
    if (draft_.PeakBytes() >= peak && draft_.PeakOp() == op) return false;
  }
}

}  // namespace slackswap
