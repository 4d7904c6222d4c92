#include "base/workers.h"

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
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++finished_;
    }
    done_.notify_one();
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
    finished_ = 0;
    loop_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  Drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return finished_ == static_cast<int>(team_.size()); });
}

}  // namespace slackswap
