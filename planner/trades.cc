#include "planner/trades.h"

#include <algorithm>

#include "planner/lower_bound.h"

namespace slackswap {

bool ChainsFit(const Trace& trace, const std::vector<Decision>& decisions,
               int32_t t, int32_t limit, std::vector<uint32_t>& stamp,
               uint32_t& walk) {
  const auto rebuilt = [&](int32_t u) {
    return decisions[u] == Decision::kRecompute;
  };
  const auto visit = [&](int32_t u) {
    if (stamp[u] == walk) return false;
    stamp[u] = walk;
    return true;
  };
  // The chains that end at a rebuilt tensor with no rebuilt dependent hold
  // every other chain through t.
  ++walk;
  std::vector<int32_t> stack = {t}, ends;
  visit(t);
  int32_t downstream = 0;
  while (!stack.empty()) {
    const int32_t x = stack.back();
    stack.pop_back();
    if (++downstream > 4 * limit) return false;
    bool end = true;
    for (int32_t d : trace.recompute_dependents.Row(x)) {
      if (!rebuilt(d)) continue;
      end = false;
      if (visit(d)) stack.push_back(d);
    }
    if (end) ends.push_back(x);
  }
  for (int32_t end : ends) {
    ++walk;
    int32_t size = 0;
    stack.assign(1, end);
    visit(end);
    while (!stack.empty()) {
      const int32_t x = stack.back();
      stack.pop_back();
      if (++size > limit) return false;
      for (int32_t input : trace.recompute_inputs.Row(x)) {
        if (rebuilt(input) && visit(input)) stack.push_back(input);
      }
    }
  }
  return true;
}

std::vector<Trade> Trades(const Trace& trace, const Plan& plan) {
  std::vector<int32_t> rebuilt;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] == Decision::kRecompute &&
        trace.tensors[t].size_bytes > 0) {
      rebuilt.push_back(t);
    }
  }
  // Dearest per byte first.
  std::stable_sort(rebuilt.begin(), rebuilt.end(), [&](int32_t a, int32_t b) {
    return CheaperToRebuildPerByte(trace.tensors[b], trace.tensors[a]);
  });
  std::vector<Trade> trades;
  for (int32_t d = 0; d < trace.num_tensors(); ++d) {
    const Tensor& dropped = trace.tensors[d];
    if (plan.decisions[d] != Decision::kKeep || dropped.size_bytes == 0 ||
        dropped.recompute_forbidden) {
      continue;
    }
    Trade trade{d, {}, -dropped.recompute_ns};
    int64_t room = dropped.size_bytes;
    for (int32_t k : rebuilt) {
      const Tensor& kept = trace.tensors[k];
      if (kept.last_forward_use < dropped.last_forward_use ||
          kept.first_backward_use > dropped.first_backward_use ||
          kept.size_bytes > room) {
        continue;
      }
      room -= kept.size_bytes;
      trade.kept.push_back(k);
      trade.gain_ns += kept.recompute_ns;
    }
    if (trade.gain_ns > 0) trades.push_back(std::move(trade));
  }
  // The largest gain first; ties by the dropped tensor's id.
  std::stable_sort(
      trades.begin(), trades.end(),
      [](const Trade& a, const Trade& b) { return a.gain_ns > b.gain_ns; });
  return trades;
}

}  // namespace slackswap
