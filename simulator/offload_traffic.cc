#include "simulator/offload_traffic.h"

#include <algorithm>
#include <utility>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "base/field_violations.h"
#include "simulator/trace_limits.h"
#include "simulator/workload.h"

namespace slackswap {
namespace {

using Count = absl::int128;

// One GPT (pre-LN, biases) or Llama (no biases) layer: the QKV and output
// projections, the MLP and two norms. GPT: 4h^2 + 2hf + f + 9h, which is
// 12h^2 + 13h for f = 4h; Llama: 4h^2 + 3hf + 2h.
Count LayerParameters(const WorkloadSpec& s) {
  const Count h = s.hidden;
  const Count f = s.ffn_hidden;
  if (s.family == ModelFamily::kLlama) return 4 * h * h + 3 * h * f + 2 * h;
  return 4 * h * h + 2 * h * f + f + 9 * h;
}

// GPT: token and learned position embeddings (one row per position of the
// sequence); Llama: token embeddings (RoPE has no parameters).
Count EmbeddingParameters(const WorkloadSpec& s) {
  const Count h = s.hidden;
  const Count positions =
      s.family == ModelFamily::kLlama ? 0 : Count(s.sequence_length);
  return (Count(s.vocabulary) + positions) * h;
}

// GPT: the final LayerNorm (the LM head is tied to the token embedding);
// Llama: the final RMSNorm and an untied LM head.
Count HeadParameters(const WorkloadSpec& s) {
  const Count h = s.hidden;
  if (s.family == ModelFamily::kLlama) return Count(s.vocabulary) * h + h;
  return 2 * h;
}

// `count`, saturated just past kMaxQuantity so that a check against it
// still fails.
int64_t Saturated(Count count) {
  return static_cast<int64_t>(std::min(count, Count(kMaxQuantity) + 1));
}

std::vector<OffloadUnit> Vgg16Units(const WorkloadSpec& s) {
  // Output channels of the 13 3x3 convolutions, as the generator builds them.
  const int64_t kConvChannels[] = {64,  64,  128, 128, 256, 256, 256,
                                   512, 512, 512, 512, 512, 512};
  std::vector<OffloadUnit> units;
  Count in = 3;
  int32_t block = 0;
  for (int64_t out : kConvChannels) {
    ++block;
    units.push_back({absl::StrCat("conv", block), block, block,
                     Saturated(9 * in * out + out)});
    in = out;
  }
  const Count side = s.image_size / 32;  // after five 2x2 pools
  in = side * side * 512;
  for (int64_t out : {4096, 4096, 1000}) {
    ++block;
    units.push_back({absl::StrCat("fc", block - 13 + 5), block, block,
                     Saturated(in * out + out)});
    in = out;
  }
  return units;
}

// The first and last forward and backward operators of each unit.
struct UnitOps {
  int32_t first_forward = -1;
  int32_t last_forward = -1;
  int32_t first_backward = -1;
  int32_t last_backward = -1;
};

std::vector<UnitOps> FindUnitOps(const TraceSpec& trace,
                                 const std::vector<OffloadUnit>& units) {
  std::vector<int32_t> unit_of_block(units.back().last_block + 1, -1);
  for (size_t u = 0; u < units.size(); ++u) {
    for (int32_t b = units[u].first_block; b <= units[u].last_block; ++b)
      unit_of_block[b] = static_cast<int32_t>(u);
  }
  std::vector<UnitOps> ops(units.size());
  for (size_t i = 0; i < trace.operators.size(); ++i) {
    const int32_t block = trace.operators[i].block_index;
    if (block < 0 || block >= static_cast<int32_t>(unit_of_block.size()) ||
        unit_of_block[block] < 0) {
      continue;
    }
    UnitOps& o = ops[unit_of_block[block]];
    const int32_t op = static_cast<int32_t>(i);
    if (trace.operators[i].phase == Phase::kForward) {
      if (o.first_forward < 0) o.first_forward = op;
      o.last_forward = op;
    } else {
      if (o.first_backward < 0) o.first_backward = op;
      o.last_backward = op;
    }
  }
  return ops;
}

FixedTransferSpec Transfer(std::string name, Direction direction,
                           int64_t size_bytes, int32_t after_op,
                           int32_t before_op, int64_t gpu_bytes,
                           int32_t release_op) {
  return {std::move(name), direction, size_bytes, after_op,
          before_op,       gpu_bytes, release_op};
}

// The transfers of `offload` (not kNone), unit by unit; `bytes[u]` is unit
// u's parameter (and gradient) bytes.
std::vector<FixedTransferSpec> Transfers(Offload offload,
                                         const std::vector<OffloadUnit>& units,
                                         const std::vector<UnitOps>& ops,
                                         const std::vector<int64_t>& bytes,
                                         int32_t last_forward_op,
                                         int32_t last_op) {
  const int32_t n = static_cast<int32_t>(units.size());
  std::vector<FixedTransferSpec> out;
  auto add_gradients = [&] {
    // In backward order: the last unit's gradients are ready first.
    for (int32_t u = n - 1; u >= 0; --u) {
      out.push_back(Transfer(absl::StrCat(units[u].name, ".grad"),
                             Direction::kD2H, bytes[u], ops[u].last_backward,
                             -1, bytes[u], -1));
    }
  };
  switch (offload) {
    case Offload::kNone:
      break;
    case Offload::kZero:
      add_gradients();
      for (int32_t u = 0; u < n; ++u) {
        out.push_back(Transfer(absl::StrCat(units[u].name, ".params"),
                               Direction::kH2D, bytes[u], last_op, -1, 0, -1));
      }
      break;
    case Offload::kZeroDpu:
      for (int32_t u = 0; u < n; ++u) {
        out.push_back(Transfer(absl::StrCat(units[u].name, ".params"),
                               Direction::kH2D, bytes[u], -1,
                               ops[u].first_forward, 0, -1));
      }
      add_gradients();
      break;
    case Offload::kFsdpCpu:
      for (int32_t u = 0; u < n; ++u) {
        out.push_back(Transfer(
            absl::StrCat(units[u].name, ".params.fwd"), Direction::kH2D,
            bytes[u], u > 0 ? ops[u - 1].first_forward : -1,
            ops[u].first_forward, bytes[u], ops[u].last_forward));
      }
      // Backward fetches in backward order: unit u's may start once the
      // backward of the unit after it (which runs first) has begun.
      for (int32_t u = n - 1; u >= 0; --u) {
        out.push_back(Transfer(
            absl::StrCat(units[u].name, ".params.bwd"), Direction::kH2D,
            bytes[u], u + 1 < n ? ops[u + 1].first_backward : last_forward_op,
            ops[u].first_backward, bytes[u], ops[u].last_backward));
      }
      add_gradients();
      break;
  }
  return out;
}

}  // namespace

const char* OffloadName(Offload offload) {
  switch (offload) {
    case Offload::kNone:
      return "none";
    case Offload::kZero:
      return "zero";
    case Offload::kZeroDpu:
      return "zero-dpu";
    case Offload::kFsdpCpu:
      return "fsdp-cpu";
  }
  return "";
}

std::optional<Offload> OffloadFromName(absl::string_view name) {
  for (Offload o :
       {Offload::kNone, Offload::kZero, Offload::kZeroDpu, Offload::kFsdpCpu}) {
    if (name == OffloadName(o)) return o;
  }
  return std::nullopt;
}

std::vector<OffloadUnit> OffloadUnits(const WorkloadSpec& spec) {
  if (spec.family == ModelFamily::kVgg16) return Vgg16Units(spec);
  std::vector<OffloadUnit> units;
  const Count layer = LayerParameters(spec);
  for (int32_t i = 0; i < spec.layers; ++i) {
    OffloadUnit& unit = units.emplace_back();
    unit.name = absl::StrCat("layer", i);
    unit.first_block = i == 0 ? 0 : i + 1;
    unit.last_block = i + 1 == spec.layers ? i + 2 : i + 1;
    Count count = layer;
    if (i == 0) count += EmbeddingParameters(spec);
    if (i + 1 == spec.layers) count += HeadParameters(spec);
    unit.parameters = Saturated(count);
  }
  return units;
}

int64_t ParameterBytes(const WorkloadSpec& spec) {
  return spec.precision == Precision::kFp32 ? 4 : 2;
}

absl::Status AddOffloadTraffic(const WorkloadSpec& spec, TraceSpec& trace) {
  if (spec.offload == Offload::kNone) return absl::OkStatus();
  const std::vector<OffloadUnit> units = OffloadUnits(spec);
  if (units.empty()) return absl::OkStatus();
  const std::vector<UnitOps> ops = FindUnitOps(trace, units);
  for (size_t u = 0; u < units.size(); ++u) {
    if (ops[u].first_forward < 0 || ops[u].first_backward < 0) {
      return absl::InternalError(absl::StrCat(
          "offload: unit ", units[u].name, " has no forward or backward op"));
    }
  }
  int32_t last_forward_op = -1;
  for (size_t i = 0; i < trace.operators.size(); ++i) {
    if (trace.operators[i].phase == Phase::kForward)
      last_forward_op = static_cast<int32_t>(i);
  }
  std::vector<int64_t> bytes(units.size());
  Count total = 0;
  for (size_t u = 0; u < units.size(); ++u) {
    const Count b = Count(units[u].parameters) * ParameterBytes(spec);
    total += b;
    bytes[u] = Saturated(b);
  }
  // The largest mode moves each unit's bytes three times (FSDP).
  if (3 * total > kMaxQuantity) {
    FieldViolations v;
    v.Add("workload.offload",
          "the model's parameter bytes moved per iteration would pass 2^60");
    return v.ToStatus();
  }
  std::vector<FixedTransferSpec> transfers =
      Transfers(spec.offload, units, ops, bytes, last_forward_op,
                static_cast<int32_t>(trace.operators.size()) - 1);
  for (FixedTransferSpec& t : transfers)
    trace.fixed_transfers.push_back(std::move(t));
  return absl::OkStatus();
}

}  // namespace slackswap
