// File: saturating.h
//
// Integer arithmetic that clamps instead of overflowing, for products and
// sums of values a request may set anywhere up to INT64_MAX (rates, counts,
// estimates), and the one conversion from floating point that is defined for
// every input.
#ifndef SLACKSWAP_BASE_SATURATING_H_
#define SLACKSWAP_BASE_SATURATING_H_

#include <cmath>
#include <cstdint>
#include <limits>

namespace slackswap {

inline constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

// a * b for a, b >= 0, INT64_MAX where it would overflow.
inline int64_t SaturatingTimes(int64_t a, int64_t b) {
  if (a == 0 || b == 0) return 0;
  if (a > kInt64Max / b) return kInt64Max;
  return a * b;
}

// a + b for a, b >= 0, INT64_MAX where it would overflow.
inline int64_t SaturatingPlus(int64_t a, int64_t b) {
  return a > kInt64Max - b ? kInt64Max : a + b;
}

// x rounded toward zero and clamped to [INT64_MIN, INT64_MAX]; NaN gives 0.
// (A cast of a double at or above 2^63 is undefined, and INT64_MAX as a
// double is 2^63.)
inline int64_t SaturatingInt64(long double x) {
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775808.0L) return kInt64Max;
  if (x <= -9223372036854775808.0L) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(x);
}

}  // namespace slackswap

#endif  // SLACKSWAP_BASE_SATURATING_H_
