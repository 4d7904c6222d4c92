#include "simulator/segment_tree.h"

#include <algorithm>

namespace slackswap {

MaxSegmentTree::MaxSegmentTree(int n, int64_t initial)
    : MaxSegmentTree(
          std::vector<int64_t>(static_cast<size_t>(std::max(n, 0)), initial)) {}

MaxSegmentTree::MaxSegmentTree(absl::Span<const int64_t> values) {
  Assign(values);
}

void MaxSegmentTree::Assign(absl::Span<const int64_t> values) {
  n_ = static_cast<int>(values.size());
  leaves_ = 1;
  while (leaves_ < values.size()) leaves_ *= 2;
  // Leaves past n hold -infinity: no addition reaches them, none wins.
  max_.assign(2 * leaves_, kNegativeInfinity);
  add_.assign(2 * leaves_, 0);
  arg_.assign(2 * leaves_, -1);
  for (size_t i = 0; i < values.size(); ++i) {
    max_[leaves_ + i] = values[i];
    arg_[leaves_ + i] = static_cast<int32_t>(i);
  }
  BuildInternal();
}

void MaxSegmentTree::BuildInternal() {
  for (size_t p = leaves_ - 1; p >= 1; --p) Pull(p);
}

void MaxSegmentTree::Add(int lo, int hi, int64_t delta) {
  lo = std::max(lo, 0);
  hi = std::min(hi, n_);
  if (lo >= hi || delta == 0) return;
  // The canonical nodes of [lo, hi) take the addition; their ancestors are
  // then pulled again, from both ends of the range.
  size_t l = leaves_ + static_cast<size_t>(lo);
  size_t r = leaves_ + static_cast<size_t>(hi);
  const size_t first = l, last = r - 1;
  auto apply = [&](size_t p) {
    max_[p] += delta;
    if (p < leaves_) add_[p] += delta;
  };
  for (; l < r; l >>= 1, r >>= 1) {
    if (l & 1) apply(l++);
    if (r & 1) apply(--r);
  }
  // The ancestors of both ends, level by level (a shared one once), each
  // from its children, of which the one on the path below was pulled just
  // before: its maximum and position are carried up rather than read back
  // (one store-to-load round trip per level otherwise).
  size_t p = first >> 1, q = last >> 1;
  if (p == 0) return;  // a single leaf
  Node at_p = Pull(p);
  Node at_q = q == p ? at_p : Pull(q);
  while (p > 1) {
    const size_t up_p = p >> 1, up_q = q >> 1;
    if (up_p == up_q && p != q) {
      at_p = at_q = Combine(up_p, at_p, at_q);  // siblings, p on the left
    } else {
      at_p = PullFrom(up_p, p, at_p);
      at_q = up_q == up_p ? at_p : PullFrom(up_q, q, at_q);
    }
    p = up_p;
    q = up_q;
  }
}

std::pair<int64_t, int> MaxSegmentTree::Max(int lo, int hi) const {
  lo = std::max(lo, 0);
  hi = std::min(hi, n_);
  if (lo >= hi) return {kNegativeInfinity, -1};
  // Canonical nodes from both ends inwards. After each climb, what the left
  // side has taken lies under node l - 1 and what the right side has taken
  // under node r, so each side adds that node's pending addition; a node
  // taken next is the sibling of that one, with the same ancestors from
  // there on, so every comparison sees equal shifts.
  size_t l = leaves_ + static_cast<size_t>(lo);
  size_t r = leaves_ + static_cast<size_t>(hi);
  std::pair<int64_t, int> left{kNegativeInfinity, -1};
  std::pair<int64_t, int> right{kNegativeInfinity, -1};
  for (; l < r; l >>= 1, r >>= 1) {
    if (l & 1) {
      // Ties go to what is already on the left.
      if (left.second < 0 || max_[l] > left.first) left = {max_[l], arg_[l]};
      ++l;
    }
    if (r & 1) {
      --r;
      // Ties go to the new node: it lies left of what the right side has.
      if (right.second < 0 || max_[r] >= right.first) {
        right = {max_[r], arg_[r]};
      }
    }
    if (left.second >= 0) left.first += add_[(l >> 1) - 1];
    if (right.second >= 0) right.first += add_[r >> 1];
  }
  // Up to the root: the additions pending above both.
  for (size_t p = ((l - 1) >> 1); left.second >= 0 && p >= 1; p >>= 1) {
    left.first += add_[p];
  }
  for (size_t p = r >> 1; right.second >= 0 && p >= 1; p >>= 1) {
    right.first += add_[p];
  }
  if (right.second < 0 || (left.second >= 0 && left.first >= right.first)) {
    return left;
  }
  return right;
}

}  // namespace slackswap
