#include "simulator/small_traces.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/splitmix.h"

namespace slackswap {
namespace {

using Random = SplitMix64;

constexpr OpKind kKinds[] = {OpKind::kMatmul,        OpKind::kAttention,
                             OpKind::kConv,          OpKind::kElementwise,
                             OpKind::kNormalization, OpKind::kDropout,
                             OpKind::kPooling,       OpKind::kEmbedding,
                             OpKind::kLoss,          OpKind::kOther};

}  // namespace

SmallTrace RandomSmallTrace(uint64_t seed, const SmallTraceOptions& options) {
  Random r(seed * 0x2545F4914F6CDD1Dull + 1);
  SmallTrace out;
  TraceSpec& t = out.trace;
  t.name = absl::StrCat("small", seed);
  const int forward = static_cast<int>(r.Int(2, options.max_forward_ops));
  const int backward =
      static_cast<int>(r.Int(std::max(1, forward - 2), forward + 2));
  const int optimizer = r.Chance(30) ? static_cast<int>(r.Int(1, 2)) : 0;
  const int blocks = static_cast<int>(r.Int(1, std::min(4, forward)));
  // Scales: sizes in bytes and durations in ns that make the link matter.
  const int64_t size_scale = r.LogInt(1 << 20, int64_t{1} << 28);
  const int64_t time_scale = r.LogInt(10'000, 5'000'000);
  auto duration = [&] {
    return r.Chance(12) ? 0 : r.LogInt(1, 2 * time_scale);
  };
  auto workspace = [&] {
    return r.Chance(70) ? 0 : r.LogInt(1, size_scale) | 1;
  };
  std::vector<int32_t> forward_block(forward);
  for (int i = 0; i < forward; ++i) {
    forward_block[i] = static_cast<int32_t>(i * blocks / forward);
  }
  for (int i = 0; i < forward; ++i) {
    OperatorSpec& op = t.operators.emplace_back();
    op.name = absl::StrCat("f", i);
    op.phase = Phase::kForward;
    op.kind = kKinds[r.Int(0, 9)];
    op.duration_ns = duration();
    op.block_index = forward_block[i];
    op.workspace_bytes = workspace();
  }
  for (int i = 0; i < backward; ++i) {
    OperatorSpec& op = t.operators.emplace_back();
    op.name = absl::StrCat("b", i);
    op.phase = Phase::kBackward;
    op.kind = kKinds[r.Int(0, 9)];
    op.duration_ns = 2 * duration();
    // Backward blocks run in reverse.
    op.block_index =
        forward_block[std::max(0, forward - 1 - i * forward / backward)];
    op.workspace_bytes = workspace();
  }
  for (int i = 0; i < optimizer; ++i) {
    OperatorSpec& op = t.operators.emplace_back();
    op.name = absl::StrCat("o", i);
    op.phase = Phase::kOptimizer;
    op.kind = OpKind::kOptimizer;
    op.duration_ns = duration();
    op.block_index = 0;
    op.workspace_bytes = workspace();
  }
  const int tensors =
      static_cast<int>(r.Int(options.min_tensors, options.max_tensors));
  for (int k = 0; k < tensors; ++k) {
    TensorSpec& x = t.tensors.emplace_back();
    x.name = absl::StrCat("t", k);
    const int producer = static_cast<int>(r.Int(0, forward - 1));
    x.producer_op = producer;
    // Odd sizes, a few of zero bytes.
    x.size_bytes = r.Chance(5) ? 0 : r.LogInt(1, size_scale) | 1;
    const int forward_uses = static_cast<int>(r.Int(0, 2));
    for (int u = 0; u < forward_uses && producer + 1 < forward; ++u) {
      x.use_ops.push_back(
          static_cast<int32_t>(r.Int(producer + 1, forward - 1)));
    }
    const int backward_uses = static_cast<int>(r.Int(1, 3));
    for (int u = 0; u < backward_uses; ++u) {
      x.use_ops.push_back(
          static_cast<int32_t>(r.Int(forward, forward + backward - 1)));
    }
    x.recompute_duration_ns = r.Chance(10) ? 0 : r.LogInt(1, 3 * time_scale);
    // Recompute inputs among earlier tensors (acyclic), often shared.
    const int inputs = k == 0 ? 0 : static_cast<int>(r.Int(0, 2));
    std::vector<int32_t> chosen;
    for (int i = 0; i < inputs; ++i) {
      chosen.push_back(static_cast<int32_t>(r.Int(0, k - 1)));
    }
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    for (int32_t c : chosen) x.recompute_inputs.push_back(c);
    x.swap_forbidden = r.Chance(10);
    x.recompute_forbidden = r.Chance(12);
  }
  Hardware& h = out.hardware;
  h.name = "small-link";
  // The link's rate relative to the trace: from far too slow to generous.
  const double bytes_per_ns =
      static_cast<double>(size_scale) / static_cast<double>(time_scale);
  h.d2h_bytes_per_second = std::max<int64_t>(
      1, static_cast<int64_t>(bytes_per_ns * 1e9 *
                              static_cast<double>(r.LogInt(1, 400)) / 100.0));
  h.h2d_bytes_per_second =
      r.Chance(60)
          ? h.d2h_bytes_per_second
          : std::max<int64_t>(1, h.d2h_bytes_per_second * r.Int(50, 300) / 100);
  h.transfer_latency_ns = r.Chance(50) ? 0 : r.LogInt(1, time_scale / 4 + 1);
  h.matmul_flops_per_second = 100'000'000'000'000;
  h.hbm_bytes_per_second = 2'000'000'000'000;
  return out;
}

}  // namespace slackswap
