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
  for (int32_t t : trade.others) next.decisions[t] = trade.others_to;
  next.decisions[trade.tensor] = trade.to;
  const auto fits = [&](int32_t t) {
    return ChainsFit(trace, next.decisions, t, limit, stamp, walk);
  };
  return (trade.to != Decision::kRecompute || fits(trade.tensor)) &&
         (trade.others_to != Decision::kRecompute ||
          std::all_of(trade.others.begin(), trade.others.end(), fits));
}

namespace {

// The largest gains first (ties as given), at most `most`.
void KeepLargest(std::vector<Trade>& trades, size_t most) {
  std::stable_sort(
      trades.begin(), trades.end(),
      [](const Trade& a, const Trade& b) { return a.gain_ns > b.gain_ns; });
  if (trades.size() > most) trades.resize(most);
}

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
    Trade trade{d,  Decision::kKeep, Decision::kRecompute,
                {}, Decision::kKeep, -dropped.recompute_ns};
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
    Trade trade{r,  Decision::kRecompute, Decision::kSwap,
                {}, Decision::kRecompute, tensor.recompute_ns};
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
  KeepLargest(link, kMaxLinkTrades);
  for (Trade& t : link) trades.push_back(std::move(t));
}

// The room trades (at most kMaxRoomTrades, the largest gains first; ties by
// the tensor's id).
void AddRoomTrades(const Trace& trace, const Plan& plan, int64_t budget_bytes,
                   const std::vector<int64_t>& h2d_ns,
                   std::vector<Trade>& trades) {
  // The bytes resident at each op at the least: a kept tensor from its
  // production to its last use, any other while the forward pass reads it
  // and from its first backward use on; the op's workspace.
  const int32_t ops = trace.num_ops();
  std::vector<int64_t> least(static_cast<size_t>(ops) + 1, 0);
  const auto add = [&](int32_t first, int32_t last, int64_t bytes) {
    if (first > last) return;
    least[first] += bytes;
    least[last + 1] -= bytes;
  };
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& x = trace.tensors[t];
    if (plan.decisions[t] == Decision::kKeep) {
      add(x.producer_op, x.last_backward_use, x.size_bytes);
    } else {
      add(x.producer_op, x.last_forward_use, x.size_bytes);
      add(x.first_backward_use, x.last_backward_use, x.size_bytes);
    }
  }
  for (int32_t o = 0; o < ops; ++o) {
    if (o > 0) least[o] += least[o - 1];
  }
  for (int32_t o = 0; o < ops; ++o) least[o] += trace.transient_bytes(o);
  // Kept tensors that may be rebuilt, the cheapest per byte first.
  std::vector<int32_t> kept = DearestFirst(trace, plan, Decision::kKeep);
  std::reverse(kept.begin(), kept.end());
  kept.erase(std::remove_if(kept.begin(), kept.end(),
                            [&](int32_t t) {
                              return trace.tensors[t].recompute_forbidden;
                            }),
             kept.end());
  std::vector<Trade> room;
  std::vector<std::pair<int32_t, int64_t>> short_ops;  // op, bytes short
  for (int32_t t = 0; t < trace.num_tensors(); ++t) {
    const Tensor& x = trace.tensors[t];
    const Decision d = plan.decisions[t];
    if (d == Decision::kKeep || x.size_bytes == 0) continue;
    short_ops.clear();
    for (int32_t o = x.last_forward_use + 1; o < x.first_backward_use; ++o) {
      const int64_t over = least[o] + x.size_bytes - budget_bytes;
      if (over > 0) short_ops.emplace_back(o, over);
    }
    if (short_ops.empty()) continue;  // (a single change keeps it)
    Trade trade{t,
                d,
                Decision::kKeep,
                {},
                Decision::kRecompute,
                d == Decision::kSwap ? h2d_ns[t] : x.recompute_ns};
    for (int32_t k : kept) {
      if (short_ops.empty()) break;
      const Tensor& y = trace.tensors[k];
      bool frees = false;
      for (auto& [o, over] : short_ops) {
        if (o <= y.last_forward_use || o >= y.first_backward_use) continue;
        frees = true;
        over -= y.size_bytes;
      }
      if (!frees) continue;
      trade.others.push_back(k);
      trade.gain_ns -= y.recompute_ns;
      short_ops.erase(
          std::remove_if(short_ops.begin(), short_ops.end(),
                         [](const auto& s) { return s.second <= 0; }),
          short_ops.end());
    }
    if (!short_ops.empty()) continue;
    // In place of a swap, the others may be swapped instead where their
    // bytes are no more than its own (the link then carries fewer): its
    // prefetch for theirs.
    int64_t others_bytes = 0, others_h2d = 0;
    bool may_swap = d == Decision::kSwap;
    for (int32_t k : trade.others) {
      others_bytes += trace.tensors[k].size_bytes;
      others_h2d += h2d_ns[k];
      may_swap &= !trace.tensors[k].swap_forbidden;
    }
    if (may_swap && others_bytes <= x.size_bytes && h2d_ns[t] > others_h2d) {
      Trade swaps = trade;
      swaps.others_to = Decision::kSwap;
      swaps.gain_ns = h2d_ns[t] - others_h2d;
      room.push_back(std::move(swaps));
    }
    if (trade.gain_ns > 0) room.push_back(std::move(trade));
  }
  KeepLargest(room, kMaxRoomTrades);
  for (Trade& t : room) trades.push_back(std::move(t));
}

}  // namespace

std::vector<Trade> Trades(const Trace& trace, const Plan& plan,
                          const TradeKinds& kinds) {
  std::vector<Trade> trades;
  if (kinds.memory) AddMemoryTrades(trace, plan, trades);
  if (kinds.link) AddLinkTrades(trace, plan, trades);
  if (kinds.room && kinds.h2d_ns != nullptr)
    AddRoomTrades(trace, plan, kinds.budget_bytes, *kinds.h2d_ns, trades);
  // The largest gain first; ties as added.
  std::stable_sort(
      trades.begin(), trades.end(),
      [](const Trade& a, const Trade& b) { return a.gain_ns > b.gain_ns; });
  return trades;
}

}  // namespace slackswap
