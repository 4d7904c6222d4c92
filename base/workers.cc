#include "base/workers.h"

#include <algorithm>

namespace slackswap {
namespace {

// A team thread checks this many times for the next loop before it sleeps:
// the searches start loops a few hundred microseconds apart, and a sleeping
// thread takes tens of microseconds to wake.
constexpr int kSpins = 1 << 12;

}  // namespace

Workers::Workers(int threads) {
  for (int k = 1; k < threads; ++k) team_.emplace_back([this] { Serve(); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    ending_.store(true);
  }
  wake_.notify_all();
  for (std::thread& t : team_) t.join();
}

void Workers::Drain() {
  for (size_t i = next_.fetch_add(1); i < size_; i = next_.fetch_add(1)) {
    (*body_)(i);
  }
}

void Workers::Serve() {
  uint64_t seen = 0;
  for (;;) {
    const auto ready = [&] {
      return ending_.load() || loop_.load(std::memory_order_acquire) != seen;
    };
    for (int i = 0; i < kSpins && !ready(); ++i) std::this_thread::yield();
    if (!ready()) {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, ready);
    }
    if (ending_.load()) return;
    seen = loop_.load(std::memory_order_acquire);
    {
      ScopedStop scope(stop_);
      Drain();
    }
    // The caller spins for the team before it sleeps (ForEach): it is
    // woken only where it sleeps. (Both sequentially consistent: where this
    // thread reads no sleeper, the caller's check after it announced its
    // sleep sees the count.)
    finished_.fetch_add(1);
    if (sleeping_.load()) {
      { std::lock_guard<std::mutex> lock(mu_); }
      done_.notify_one();
    }
  }
}

void Workers::ForEach(size_t n, const std::function<void(size_t)>& body) {
  if (team_.empty() || n <= 1) {
    for (size_t i = 0; i < n; ++i) body(i);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    body_ = &body;
    size_ = n;
    stop_ = CurrentStop();
    next_.store(0);
    finished_.store(0);
    loop_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  Drain();
  // The team's last items often end a few microseconds after the caller's:
  // it checks for them as the team checks for a loop, and sleeps only then
  // (a wake-up takes tens of microseconds, longer than many items).
  const auto all_done = [&] {
    return finished_.load() == static_cast<int>(team_.size());
  };
  for (int i = 0; i < kSpins && !all_done(); ++i) std::this_thread::yield();
  if (all_done()) return;
  std::unique_lock<std::mutex> lock(mu_);
  sleeping_.store(true);
  done_.wait(lock, all_done);
  sleeping_.store(false);
}

size_t MaxScanBatch(const Workers* workers) {
  const size_t threads =
      workers != nullptr ? static_cast<size_t>(workers->threads()) : 1;
  return threads > 1 ? 8 * threads : 1;
}

size_t ScanInOrder(Workers* workers, size_t n,
                   const std::function<void(size_t, size_t)>& prepare,
                   const std::function<ScanVerdict(size_t, size_t)>& judge,
                   const std::function<bool()>& batch) {
  const size_t first =
      workers != nullptr ? static_cast<size_t>(workers->threads()) : 1;
  const size_t most = MaxScanBatch(workers);
  size_t batch_size = first;
  size_t m = 0;
  while (m < n) {
    if (batch != nullptr && !batch()) return m;
    const size_t end = std::min(n, m + batch_size);
    const auto prepare_one = [&](size_t slot) { prepare(slot, m + slot); };
    if (workers != nullptr && end - m > 1) {
      workers->ForEach(end - m, prepare_one);
    } else {
      for (size_t slot = 0; slot < end - m; ++slot) prepare_one(slot);
    }
    bool changed = false;
    for (size_t i = m; i < end; ++i) {
      const ScanVerdict verdict = judge(i - m, i);
      if (verdict == ScanVerdict::kStop) return i + 1;
      if (verdict == ScanVerdict::kChanged) {
        m = i + 1;
        changed = true;
        break;
      }
    }
    if (!changed) m = end;
    // (Candidates prepared after a change were prepared in vain: a batch
    // starts small again after one.)
    batch_size = changed ? first : std::min(batch_size * 2, most);
  }
  return m;
}

}  // namespace slackswap
