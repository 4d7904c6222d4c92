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

bool MakeTrade(const Trace& trace, const Plan& plan, const Trade& trade,
               int32_t limit, std::vector<uint32_t>& stamp, uint32_t& walk,
               Plan& next) {
  const auto still = [&](int32_t t, Decision d) {
    return plan.decisions[t] == d;
  };
  if (!still(trade.tensor, trade.from) ||
      !std::all_of(trade.others.begin(), trade.others.end(),
                   [&](int32_t t) { return still(t, trade.to); })) {
    return false;
  }
  for (int32_t t : trade.others) next.decisions[t] = trade.from;
  next.decisions[trade.tensor] = trade.to;
  const auto fits = [&](int32_t t) {
    return ChainsFit(trace, next.decisions, t, limit, stamp, walk);
  };
  return trade.to == Decision::kRecompute
             ? fits(trade.tensor)
             : std::all_of(trade.others.begin(), trade.others.end(), fits);
}

namespace {

// The tensors of `plan` with decision d and some bytes, the dearest to
// rebuild per byte first (ties by id).
std::vector<int32_t> DearestFirst(const Trace& trace, const Plan& plan,
                                  Decision d) {
  std::vector<int32_t> out;
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    if (plan.decisions[t] == d && trace.tensors[t].size_bytes > 0)
      out.push_back(t);
  }
  std::stable_sort(out.begin(), out.end(), [&](int32_t a, int32_t b) {
    return CheaperToRebuildPerByte(trace.tensors[b], trace.tensors[a]);
  });
  return out;
}

void AddMemoryTrades(const Trace& trace, const Plan& plan,
                     std::vector<Trade>& trades) {
  const std::vector<int32_t> rebuilt =
      DearestFirst(trace, plan, Decision::kRecompute);
  for (int32_t d = 0; d < trace.num_tensors(); ++d) {
    const Tensor& dropped = trace.tensors[d];
    if (plan.decisions[d] != Decision::kKeep || dropped.size_bytes == 0 ||
        dropped.recompute_forbidden) {
      continue;
    }
    Trade trade{
        d, Decision::kKeep, Decision::kRecompute, {}, -dropped.recompute_ns};
    int64_t room = dropped.size_bytes;
    for (int32_t k : rebuilt) {
      const Tensor& kept = trace.tensors[k];
      if (kept.last_forward_use < dropped.last_forward_use ||
          kept.first_backward_use > dropped.first_backward_use ||
          kept.size_bytes > room) {
        continue;
      }
      room -= kept.size_bytes;
      trade.others.push_back(k);
      trade.gain_ns += kept.recompute_ns;
    }
    if (trade.gain_ns > 0) trades.push_back(std::move(trade));
  }
}

void AddLinkTrades(const Trace& trace, const Plan& plan,
                   std::vector<Trade>& trades) {
  std::vector<int32_t> swapped = DearestFirst(trace, plan, Decision::kSwap);
  // The cheapest first (ties: the later tensor first).
  std::reverse(swapped.begin(), swapped.end());
  swapped.erase(std::remove_if(swapped.begin(), swapped.end(),
                               [&](int32_t t) {
                                 return trace.tensors[t].recompute_forbidden;
                               }),
                swapped.end());
  std::vector<Trade> link;
  for (int32_t r : DearestFirst(trace, plan, Decision::kRecompute)) {
    const Tensor& tensor = trace.tensors[r];
    if (tensor.swap_forbidden) continue;
    Trade trade{
        r, Decision::kRecompute, Decision::kSwap, {}, tensor.recompute_ns};
    int64_t covered = 0;
    for (size_t i = 0; i < swapped.size() && covered < tensor.size_bytes; ++i) {
      trade.others.push_back(swapped[i]);
      covered += trace.tensors[swapped[i]].size_bytes;
      trade.gain_ns -= trace.tensors[swapped[i]].recompute_ns;
    }
    if (covered >= tensor.size_bytes && trade.gain_ns > 0)
      link.push_back(std::move(trade));
  }
  // The largest gains alone (ties by the tensor's id).
  std::stable_sort(
      link.begin(), link.end(),
      [](const Trade& a, const Trade& b) { return a.gain_ns > b.gain_ns; });
  if (link.size() > kMaxLinkTrades) link.resize(kMaxLinkTrades);
  for (Trade& t : link) trades.push_back(std::move(t));
}

}  // namespace

std::vector<Trade> Trades(const Trace& trace, const Plan& plan,
                          bool memory_trades, bool link_trades) {
  std::vector<Trade> trades;
  if (memory_trades) AddMemoryTrades(trace, plan, trades);
  if (link_trades) AddLinkTrades(trace, plan, trades);
  // The largest gain first; ties as added.
  std::stable_sort(
      trades.begin(), trades.end(),
      [](const Trade& a, const Trade& b) { return a.gain_ns > b.gain_ns; });
  return trades;
}

}  // namespace slackswap
