#include "planner/segment_tree.h"

#include <algorithm>

namespace slackswap {

MaxSegmentTree::MaxSegmentTree(int n, int64_t initial)
    : n_(n),
      max_(4 * static_cast<size_t>(std::max(n, 1))),
      add_(max_.size(), 0),
      arg_(max_.size(), -1) {
  if (n_ > 0) Build(1, 0, n_, initial);
}

void MaxSegmentTree::Build(int node, int lo, int hi, int64_t initial) {
  max_[node] = initial;
  arg_[node] = lo;
  if (hi - lo == 1) return;
  const int mid = (lo + hi) / 2;
  Build(2 * node, lo, mid, initial);
  Build(2 * node + 1, mid, hi, initial);
}

void MaxSegmentTree::Add(int lo, int hi, int64_t delta) {
  lo = std::max(lo, 0);
  hi = std::min(hi, n_);
  if (lo < hi && delta != 0) Add(1, 0, n_, lo, hi, delta);
}

void MaxSegmentTree::Add(int node, int lo, int hi, int qlo, int qhi,
                         int64_t delta) {
  if (qlo <= lo && hi <= qhi) {
    max_[node] += delta;
    add_[node] += delta;
    return;
  }
  const int mid = (lo + hi) / 2;
  if (qlo < mid) Add(2 * node, lo, mid, qlo, qhi, delta);
  if (qhi > mid) Add(2 * node + 1, mid, hi, qlo, qhi, delta);
  const int left = 2 * node, right = 2 * node + 1;
  // Ties go left, so the reported position is the leftmost maximum.
  if (max_[left] >= max_[right]) {
    max_[node] = max_[left] + add_[node];
    arg_[node] = arg_[left];
  } else {
    max_[node] = max_[right] + add_[node];
    arg_[node] = arg_[right];
  }
}

std::pair<int64_t, int> MaxSegmentTree::Max(int lo, int hi) const {
  lo = std::max(lo, 0);
  hi = std::min(hi, n_);
  if (lo >= hi) return {kNegativeInfinity, -1};
  return Max(1, 0, n_, lo, hi);
}

std::pair<int64_t, int> MaxSegmentTree::Max(int node, int lo, int hi, int qlo,
                                            int qhi) const {
  if (qlo <= lo && hi <= qhi) return {max_[node], arg_[node]};
  const int mid = (lo + hi) / 2;
  std::pair<int64_t, int> best{kNegativeInfinity, -1};
  if (qlo < mid) best = Max(2 * node, lo, mid, qlo, qhi);
  if (qhi > mid) {
    const std::pair<int64_t, int> right = Max(2 * node + 1, mid, hi, qlo, qhi);
    if (best.second < 0 || right.first > best.first) best = right;
  }
  best.first += add_[node];
  return best;
}

}  // namespace slackswap
