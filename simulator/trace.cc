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

}  // namespace slackswap
