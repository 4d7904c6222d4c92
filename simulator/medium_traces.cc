#include "simulator/medium_traces.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "simulator/splitmix.h"

namespace slackswap {
namespace {

// Rebuild cost per byte (ps) of each kind: cheap elementwise work to
// expensive matmuls.
struct KindCost {
  OpKind kind;
  int64_t lo_ps_per_byte;
  int64_t hi_ps_per_byte;
};
constexpr KindCost kCheap[] = {{OpKind::kElementwise, 1, 4},
                               {OpKind::kNormalization, 1, 6},
                               {OpKind::kDropout, 1, 3},
                               {OpKind::kPooling, 1, 5}};
constexpr KindCost kDear[] = {{OpKind::kMatmul, 20, 400},
                              {OpKind::kAttention, 8, 120},
                              {OpKind::kConv, 20, 300}};

}  // namespace

const char* MediumShapeName(MediumShape shape) {
  switch (shape) {
    case MediumShape::kChain:
      return "chain";
    case MediumShape::kBranches:
      return "branches";
    case MediumShape::kDag:
      return "dag";
  }
  return "?";
}

namespace {

// The forward pass's shape: per forward operator (one saved tensor each),
// its output's size, its duration, the tensors it reads and its block.
struct ForwardShape {
  std::vector<int64_t> size;
  std::vector<int64_t> duration;
  std::vector<std::vector<int32_t>> inputs;
  std::vector<int32_t> block;
};

// The n forward operators, in blocks, wired as options.shape says.
void AddForward(const MediumTraceOptions& options, int n, SplitMix64& r,
                TraceSpec& t, ForwardShape& f) {
  const int per_block = static_cast<int>(r.Int(3, 12));
  const int64_t size_scale = r.LogInt(4 << 20, 256 << 20);
  f.size.resize(n);
  f.duration.resize(n);
  f.inputs.resize(n);
  f.block.resize(n);
  std::vector<int64_t>& size = f.size;
  std::vector<int64_t>& duration = f.duration;
  std::vector<std::vector<int32_t>>& inputs = f.inputs;
  std::vector<int32_t>& block = f.block;
  int32_t b = 0;
  int in_block = 0;
  int branches = 1;
  std::vector<int32_t> branch_tail;  // kBranches: each branch's last tensor
  int32_t block_input = -1;
  for (int i = 0; i < n; ++i) {
    if (in_block == per_block) {
      ++b;
      in_block = 0;
    }
    block[i] = b;
    OperatorSpec& op = t.operators.emplace_back();
    op.name = absl::StrCat("f", i);
    op.phase = Phase::kForward;
    op.block_index = b;
    // One expensive operator in three.
    const KindCost& k = r.Chance(33) ? kDear[r.Int(0, 2)] : kCheap[r.Int(0, 3)];
    op.kind = k.kind;
    size[i] = r.LogInt(size_scale / 8, size_scale * 2);
    // Activations keep their shape within a block, mostly.
    if (in_block > 0 && r.Chance(60)) size[i] = size[i - 1];
    duration[i] = std::max<int64_t>(
        1, size[i] * r.LogInt(k.lo_ps_per_byte, k.hi_ps_per_byte) / 1000);
    op.duration_ns = duration[i];
    if (k.kind == OpKind::kMatmul && r.Chance(40)) {
      op.workspace_bytes =
          r.LogInt(1 << 20, std::max<int64_t>(2 << 20, size[i] / 2));
    }
    if (i == 0) {
      branch_tail = {0};  // the first block: one branch from op 0
      ++in_block;
      continue;
    }
    switch (options.shape) {
      case MediumShape::kChain:
        inputs[i] = {i - 1};
        break;
      case MediumShape::kBranches:
        if (in_block == 0) {
          // A block opens: its input feeds 2 to 4 branches.
          block_input = i - 1;
          branches = static_cast<int>(r.Int(2, 4));
          branch_tail.assign(branches, block_input);
          inputs[i] = {block_input};
          branch_tail[0] = i;
        } else if (in_block == per_block - 1 || i == n - 1) {
          // The block's last operator joins its branches.
          inputs[i] = branch_tail;
        } else {
          const int which = static_cast<int>(r.Int(0, branches - 1));
          inputs[i] = {branch_tail[which]};
          branch_tail[which] = i;
        }
        break;
      case MediumShape::kDag: {
        inputs[i] = {i - 1};
        const int more = static_cast<int>(r.Int(0, 2));
        for (int m = 0; m < more && i >= 2; ++m) {
          const int back = static_cast<int>(r.Int(2, std::min(i, 8)));
          inputs[i].push_back(i - back);
        }
        // Now and then a long skip connection.
        if (i > 12 && r.Chance(8)) {
          inputs[i].push_back(static_cast<int32_t>(r.Int(0, i - 10)));
        }
        break;
      }
    }
    std::sort(inputs[i].begin(), inputs[i].end());
    inputs[i].erase(std::unique(inputs[i].begin(), inputs[i].end()),
                    inputs[i].end());
    ++in_block;
  }
}

// The backward operators (operator n + j mirrors forward operator
// n - 1 - j) and the saved tensors.
void AddBackwardAndTensors(int n, SplitMix64& r, const ForwardShape& f,
                           TraceSpec& t) {
  // Backward: operator n + j mirrors forward operator n - 1 - j.
  const std::vector<int64_t>& size = f.size;
  const std::vector<int64_t>& duration = f.duration;
  const std::vector<std::vector<int32_t>>& inputs = f.inputs;
  const std::vector<int32_t>& block = f.block;
  const auto mirror = [&](int i) { return 2 * n - 1 - i; };
  for (int j = 0; j < n; ++j) {
    const int i = n - 1 - j;
    OperatorSpec& op = t.operators.emplace_back();
    op.name = absl::StrCat("b", i);
    op.phase = Phase::kBackward;
    op.block_index = block[i];
    op.kind = t.operators[i].kind;
    op.duration_ns = std::max<int64_t>(1, duration[i] * r.Int(150, 250) / 100);
    op.workspace_bytes = t.operators[i].workspace_bytes;
  }
  for (int i = 0; i < n; ++i) {
    TensorSpec& x = t.tensors.emplace_back();
    x.name = absl::StrCat("t", i, ".", t.operators[i].name);
    x.size_bytes = size[i];
    x.producer_op = i;
    // Read in forward by the operators that take it as an input; saved for
    // their backward (a matmul's backward reads its inputs), and for its
    // own producer's backward when that is not elementwise-cheap.
    std::vector<int32_t> uses;
    for (int c = i + 1; c < n; ++c) {
      if (std::find(inputs[c].begin(), inputs[c].end(), i) != inputs[c].end()) {
        uses.push_back(c);
        uses.push_back(mirror(c));
      }
    }
    if (uses.empty() || r.Chance(50)) uses.push_back(mirror(i));
    std::sort(uses.begin(), uses.end());
    x.use_ops = uses;
    x.recompute_inputs = inputs[i];
    x.recompute_duration_ns = duration[i];
    x.swap_forbidden = r.Chance(3);
    x.recompute_forbidden = i == 0 || r.Chance(4);
  }
}

// A GPU preset's link and latency, sometimes slower (a shared or older
// link) or faster.
Hardware RandomLink(SplitMix64& r) {
  const std::vector<std::string>& gpus = HardwarePresetNames();
  Hardware h;
  h = *HardwarePreset(gpus[r.Int(0, static_cast<int64_t>(gpus.size()) - 1)]);
  const int64_t percent = r.Chance(50) ? 100 : r.LogInt(25, 400);
  h.d2h_bytes_per_second =
      std::max<int64_t>(1, h.d2h_bytes_per_second / 100 * percent);
  h.h2d_bytes_per_second =
      std::max<int64_t>(1, h.h2d_bytes_per_second / 100 * percent);
  h.name = absl::StrCat(h.name, "-link", percent);
  return h;
}

}  // namespace

MediumTrace RandomMediumTrace(uint64_t seed,
                              const MediumTraceOptions& options) {
  SplitMix64 r(seed * 0x9E6C63D0676A9A99ull + 7 +
               static_cast<uint64_t>(options.shape));
  MediumTrace out;
  TraceSpec& t = out.trace;
  t.name = absl::StrCat(MediumShapeName(options.shape), seed);
  const int n =
      static_cast<int>(r.Int(options.min_tensors, options.max_tensors));
  // One saved tensor per forward operator: n forward operators in blocks.
  ForwardShape f;
  AddForward(options, n, r, t, f);
  AddBackwardAndTensors(n, r, f, t);
  out.hardware = RandomLink(r);
  return out;
}

}  // namespace slackswap
