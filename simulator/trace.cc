#include "simulator/trace.h"

namespace slackswap {

Csr Csr::FromPairs(int32_t rows,
                   const std::vector<std::pair<int32_t, int32_t>>& pairs) {
  Csr csr;
  csr.begin.assign(static_cast<size_t>(rows) + 1, 0);
  for (const auto& [row, item] : pairs) ++csr.begin[row + 1];
  for (int32_t i = 0; i < rows; ++i) csr.begin[i + 1] += csr.begin[i];
  csr.items.resize(pairs.size());
  std::vector<int32_t> next(csr.begin.begin(), csr.begin.end() - 1);
  for (const auto& [row, item] : pairs) csr.items[next[row]++] = item;
  return csr;
}

Csr Csr::FromRows(int32_t rows, absl::Span<const int32_t> row_of,
                  absl::Span<const int32_t> order) {
  Csr csr;
  csr.begin.assign(static_cast<size_t>(rows) + 1, 0);
  for (const int32_t row : row_of) {
    if (row >= 0) ++csr.begin[row + 1];
  }
  for (int32_t i = 0; i < rows; ++i) csr.begin[i + 1] += csr.begin[i];
  csr.items.resize(static_cast<size_t>(csr.begin[rows]));
  std::vector<int32_t> next(csr.begin.begin(), csr.begin.end() - 1);
  auto place = [&](int32_t item) {
    const int32_t row = row_of[item];
    if (row >= 0) csr.items[next[row]++] = item;
  };
  if (order.empty()) {
    for (int32_t i = 0; i < static_cast<int32_t>(row_of.size()); ++i) place(i);
  } else {
    for (const int32_t i : order) place(i);
  }
  return csr;
}

std::vector<int64_t> FixedBytesPerOp(const Trace& trace) {
  if (trace.fixed_transfers.empty()) return {};
  const int32_t n = trace.num_ops();
  std::vector<int64_t> diff(static_cast<size_t>(n) + 1, 0);
  for (const FixedTransfer& x : trace.fixed_transfers) {
    if (x.gpu_bytes == 0) continue;
    const bool h2d = x.direction == Direction::kH2D;
    const int32_t from = h2d ? x.before_op : x.after_op;
    const int32_t to = h2d ? x.release_op : x.after_op;
    diff[from] += x.gpu_bytes;
    diff[to + 1] -= x.gpu_bytes;
  }
  std::vector<int64_t> bytes(n);
  int64_t running = 0;
  for (int32_t o = 0; o < n; ++o) bytes[o] = running += diff[o];
  return bytes;
}

}  // namespace slackswap
