// File: splitmix.h
//
// The random numbers of the generated test traces (small_traces.h,
// medium_traces.h): splitmix64, small, fast, and the same on every machine,
// unlike the standard library's distributions.
#ifndef SLACKSWAP_SIMULATOR_SPLITMIX_H_
#define SLACKSWAP_SIMULATOR_SPLITMIX_H_

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace slackswap {

class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // Uniform in [lo, hi].
  int64_t Int(int64_t lo, int64_t hi) {
    return lo +
           static_cast<int64_t>(Next() % static_cast<uint64_t>(hi - lo + 1));
  }
  bool Chance(int percent) { return Int(0, 99) < percent; }
  // Uniform in [0, 1).
  double Unit() {
    return static_cast<double>(Next() >> 11) / 9007199254740992.0;
  }
  // Log-uniform in [lo, hi] (lo > 0).
  int64_t LogInt(int64_t lo, int64_t hi) {
    const double v = std::exp(std::log(static_cast<double>(lo)) +
                              Unit() * (std::log(static_cast<double>(hi)) -
                                        std::log(static_cast<double>(lo))));
    return std::clamp(static_cast<int64_t>(v), lo, hi);
  }

 private:
  uint64_t state_;
};

}  // namespace slackswap

#endif  // SLACKSWAP_SIMULATOR_SPLITMIX_H_
