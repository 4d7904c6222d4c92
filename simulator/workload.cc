#include "simulator/workload.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/numeric/int128.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "base/field_violations.h"
#include "base/status_macros.h"
#include "simulator/trace_spec.h"
#include "simulator/trace_validation.h"

namespace slackswap {
namespace {

// Builds a trace operator by operator. Forward operators are added in
// order; each records the backward operator it implies, and EmitBackward adds
// those in reverse (autograd order for a sequential model).
class TraceBuilder {
 public:
  explicit TraceBuilder(const Hardware& hardware) : hw_(hardware) {}

  // Adds a forward operator; returns its index.
  int32_t Forward(std::string name, OpKind kind, int32_t block, double flops,
                  double bytes) {
    OperatorSpec& op = trace_.operators.emplace_back();
    op.name = std::move(name);
    op.phase = Phase::kForward;
    op.kind = kind;
    op.block_index = block;
    op.flops = Checked(flops, forward_flops_);
    op.memory_traffic_bytes = Checked(bytes);
    op.duration_ns = Roofline(flops, bytes);
    pending_.push_back({});
    return static_cast<int32_t>(trace_.operators.size()) - 1;
  }

  // The backward operator of forward `op`: `factor` times its work, reading
  // `reads`, holding `gradient_bytes` of activation gradients as workspace.
  void Backward(int32_t op, std::vector<int32_t> reads, double gradient_bytes,
                double factor = 2.0) {
    pending_[op] = {true, std::move(reads), gradient_bytes, factor};
  }

  // Adds a saved tensor produced by `producer`, read by `forward_reads`.
  // Its rebuild reruns `rebuild_ops` (forward operators) from
  // `recompute_inputs`.
  int32_t Saved(std::string name, double size_bytes, int32_t producer,
                std::vector<int32_t> forward_reads,
                std::vector<int32_t> recompute_inputs,
                std::vector<int32_t> rebuild_ops) {
    TensorSpec& t = trace_.tensors.emplace_back();
    t.name = std::move(name);
    t.size_bytes = Checked(size_bytes, saved_bytes_);
    t.producer_op = producer;
    t.use_ops = std::move(forward_reads);
    t.recompute_inputs = std::move(recompute_inputs);
    double rebuild_ns = 0;
    for (int32_t op : rebuild_ops)
      rebuild_ns += static_cast<double>(trace_.operators[op].duration_ns);
    t.recompute_duration_ns = Checked(rebuild_ns);
    t.recompute_forbidden = rebuild_ops.empty();
    return static_cast<int32_t>(trace_.tensors.size()) - 1;
  }

  // Adds a dropout mask (one byte per element) produced by `producer`. Its
  // rebuild regenerates it from the saved random-number state: it writes the
  // mask once and reads nothing, so it costs far less than rerunning the
  // dropout op.
  int32_t Mask(std::string name, double size_bytes, int32_t producer) {
    const int32_t t =
        Saved(std::move(name), size_bytes, producer, {}, {}, {producer});
    trace_.tensors[t].recompute_duration_ns =
        RooflineNs(size_bytes, size_bytes);
    return t;
  }

  // Adds a forward read of `tensor` by a later operator.
  void Read(int32_t tensor, int32_t op) {
    trace_.tensors[tensor].use_ops.push_back(op);
  }

  int64_t Duration(int32_t op) const {
    return trace_.operators[op].duration_ns;
  }

  TraceSpec Finish(std::string name) {
    const int32_t num_forward = static_cast<int32_t>(trace_.operators.size());
    trace_.operators.reserve(2 * trace_.operators.size());
    for (int32_t f = num_forward - 1; f >= 0; --f) {
      const Pending& p = pending_[f];
      if (!p.present) continue;
      const OperatorSpec& fwd = trace_.operators[f];  // reserved: stays valid
      OperatorSpec op;
      op.name = absl::StrCat(fwd.name, ".backward");
      op.phase = Phase::kBackward;
      op.kind = fwd.kind;
      op.block_index = fwd.block_index;
      const double flops = static_cast<double>(fwd.flops) * p.factor;
      const double bytes =
          static_cast<double>(fwd.memory_traffic_bytes) * p.factor;
      op.flops = Checked(flops);
      op.memory_traffic_bytes = Checked(bytes);
      op.duration_ns = Roofline(flops, bytes);
      op.workspace_bytes = Checked(p.gradient_bytes, workspace_bytes_);
      trace_.operators.push_back(std::move(op));
      const int32_t index = static_cast<int32_t>(trace_.operators.size()) - 1;
      for (int32_t t : p.reads) trace_.tensors[t].use_ops.push_back(index);
    }
    trace_.name = std::move(name);
    return std::move(trace_);
  }

  // True when some quantity, or a sum of them that the trace rules or
  // Summarize take, passed 2^60: the parameters are too large.
  bool too_large() const {
    return too_large_ || iteration_ns_ > kMaxQuantity ||
           forward_flops_ > kMaxQuantity || saved_bytes_ > kMaxQuantity ||
           workspace_bytes_ > kMaxQuantity;
  }

 private:
  // `value` as an int64 quantity; 0 and too_large() when it is not a
  // finite value in [0, 2^60]. `sum`, when given, accumulates it.
  int64_t Checked(double value) {
    if (!(value >= 0 && value <= static_cast<double>(kMaxQuantity))) {
      too_large_ = true;
      return 0;
    }
    return static_cast<int64_t>(value);
  }
  int64_t Checked(double value, double& sum) {
    sum += value;
    return Checked(value);
  }

  struct Pending {
    bool present = false;
    std::vector<int32_t> reads;
    double gradient_bytes = 0;
    double factor = 2.0;
  };

  // An operator's duration; counted in the iteration's sum.
  int64_t Roofline(double flops, double bytes) {
    iteration_ns_ += RooflineSeconds(flops, bytes) * 1e9;
    return RooflineNs(flops, bytes);
  }
  int64_t RooflineNs(double flops, double bytes) {
    return Checked(std::ceil(RooflineSeconds(flops, bytes) * 1e9));
  }
  double RooflineSeconds(double flops, double bytes) const {
    return std::max(flops / static_cast<double>(hw_.matmul_flops_per_second),
                    bytes / static_cast<double>(hw_.hbm_bytes_per_second));
  }

  const Hardware& hw_;
  TraceSpec trace_;
  std::vector<Pending> pending_;
  bool too_large_ = false;
  double iteration_ns_ = 0;
  double forward_flops_ = 0;  // forward operators only
  double saved_bytes_ = 0;
  double workspace_bytes_ = 0;
};

double BytesPerElement(Precision p) {
  return p == Precision::kFp32 ? 4.0 : 2.0;
}

// Attention for one transformer layer, from the fused qkv tensor to the
// attention output `o` (which it also saves). Returns o's producer.
struct AttentionOut {
  int32_t op;  // producer of the attention output
  int32_t output;
  std::vector<int32_t> rebuild_ops;  // ops that rebuild the output from qkv
};

AttentionOut AddAttention(TraceBuilder& b, const WorkloadSpec& spec,
                          int32_t block, const std::string& prefix,
                          int32_t qkv) {
  const double e = BytesPerElement(spec.precision);
  const double T = static_cast<double>(spec.batch * spec.sequence_length);
  const double h = static_cast<double>(spec.hidden);
  const double s = static_cast<double>(spec.sequence_length);
  const double a = spec.heads;
  const double dense_flops = 4.0 * T * s * h;  // QK^T and AV, 2 FLOPs per MAC
  if (spec.flash_attention) {
    // FlashAttention never materializes the s x s scores; causal masking
    // skips about half the blocks.
    const double flops = spec.causal ? dense_flops / 2 : dense_flops;
    const int32_t op = b.Forward(prefix + "attention", OpKind::kAttention,
                                 block, flops, e * T * h * 4);
    b.Read(qkv, op);
    const int32_t o =
        b.Saved(prefix + "attention_out", e * T * h, op, {}, {qkv}, {op});
    b.Backward(op, {qkv, o}, e * T * h * 3, 2.5);
    return {op, o, {op}};
  }
  // Unfused attention: saves softmax output (2as), its dropout mask (as) and
  // the dropped probabilities (2as) per token: 5as bytes per token.
  const double scores = e * T * a * s;
  const double masks = T * a * s;
  const int32_t qk = b.Forward(prefix + "attention_scores", OpKind::kMatmul,
                               block, dense_flops / 2, e * T * h * 2 + scores);
  b.Read(qkv, qk);
  const int32_t softmax_op = b.Forward(prefix + "softmax", OpKind::kElementwise,
                                       block, 5 * T * a * s, 2 * scores);
  const int32_t probs = b.Saved(prefix + "softmax_out", scores, softmax_op, {},
                                {qkv}, {qk, softmax_op});
  const int32_t drop_op =
      b.Forward(prefix + "attention_dropout", OpKind::kDropout, block,
                T * a * s, 2 * scores + masks);
  b.Read(probs, drop_op);
  const int32_t mask =
      b.Mask(prefix + "attention_dropout_mask", masks, drop_op);
  const int32_t dropped = b.Saved(prefix + "attention_probs", scores, drop_op,
                                  {}, {probs, mask}, {drop_op});
  const int32_t av = b.Forward(prefix + "attention_values", OpKind::kMatmul,
                               block, dense_flops / 2, scores + e * T * h * 2);
  b.Read(dropped, av);
  b.Read(qkv, av);
  const int32_t o = b.Saved(prefix + "attention_out", e * T * h, av, {},
                            {dropped, qkv}, {av});
  b.Backward(qk, {qkv}, e * T * h * 2);
  b.Backward(softmax_op, {probs}, scores);
  b.Backward(drop_op, {mask}, scores);
  b.Backward(av, {dropped, qkv}, scores + e * T * h);
  return {av, o, {av}};
}

// Adds one GPT (pre-LN) or Llama layer reading the saved layer input `x`;
// returns the saved layer output (the next layer's input).
int32_t AddTransformerLayer(TraceBuilder& b, const WorkloadSpec& spec,
                            int32_t layer, int32_t x) {
  const double e = BytesPerElement(spec.precision);
  const double T = static_cast<double>(spec.batch * spec.sequence_length);
  const double h = static_cast<double>(spec.hidden);
  const double f = static_cast<double>(spec.ffn_hidden);
  const int32_t block = layer + 1;
  const std::string p = absl::StrCat("layer", layer, ".");
  const bool llama = spec.family == ModelFamily::kLlama;
  const OpKind norm = OpKind::kNormalization;

  // Attention half.
  const int32_t ln1 = b.Forward(p + (llama ? "rmsnorm1" : "layernorm1"), norm,
                                block, 5 * T * h, 2 * e * T * h);
  b.Read(x, ln1);
  b.Backward(ln1, {x}, e * T * h);
  const int32_t y1 = b.Saved(p + "qkv_in", e * T * h, ln1, {}, {x}, {ln1});
  const int32_t qkv_op =
      b.Forward(p + (llama ? "qkv_rope" : "qkv"), OpKind::kMatmul, block,
                6 * T * h * h, e * (T * h + 3 * h * h + 3 * T * h));
  b.Read(y1, qkv_op);
  b.Backward(qkv_op, {y1}, e * T * h);
  const int32_t qkv =
      b.Saved(p + "qkv", 3 * e * T * h, qkv_op, {}, {y1}, {qkv_op});
  const AttentionOut attn = AddAttention(b, spec, block, p, qkv);
  const int32_t proj = b.Forward(p + "attention_proj", OpKind::kMatmul, block,
                                 2 * T * h * h, e * (2 * T * h + h * h));
  b.Read(attn.output, proj);
  b.Backward(proj, {attn.output}, e * T * h);
  int32_t x2;
  if (llama) {
    const int32_t add = b.Forward(p + "residual1", OpKind::kElementwise, block,
                                  T * h, 3 * e * T * h);
    b.Read(x, add);
    b.Backward(add, {}, e * T * h);
    x2 = b.Saved(p + "residual1_out", e * T * h, add, {}, {attn.output, x},
                 {proj, add});
  } else {
    const int32_t drop = b.Forward(p + "dropout1_residual", OpKind::kDropout,
                                   block, 2 * T * h, (3 * e + 1) * T * h);
    b.Read(x, drop);
    const int32_t mask = b.Mask(p + "dropout1_mask", T * h, drop);
    b.Backward(drop, {mask}, e * T * h);
    x2 = b.Saved(p + "residual1_out", e * T * h, drop, {},
                 {attn.output, mask, x}, {proj, drop});
  }

  // MLP half.
  const int32_t ln2 = b.Forward(p + (llama ? "rmsnorm2" : "layernorm2"), norm,
                                block, 5 * T * h, 2 * e * T * h);
  b.Read(x2, ln2);
  b.Backward(ln2, {x2}, e * T * h);
  const int32_t y2 = b.Saved(p + "mlp_in", e * T * h, ln2, {}, {x2}, {ln2});
  int32_t down_in_op, down_in;
  if (llama) {
    const int32_t gate_op =
        b.Forward(p + "gate_proj", OpKind::kMatmul, block, 2 * T * h * f,
                  e * (T * h + h * f + T * f));
    const int32_t up_op = b.Forward(p + "up_proj", OpKind::kMatmul, block,
                                    2 * T * h * f, e * (T * h + h * f + T * f));
    b.Read(y2, gate_op);
    b.Read(y2, up_op);
    b.Backward(gate_op, {y2}, e * T * h);
    b.Backward(up_op, {y2}, e * T * h);
    const int32_t gate =
        b.Saved(p + "gate", e * T * f, gate_op, {}, {y2}, {gate_op});
    const int32_t up = b.Saved(p + "up", e * T * f, up_op, {}, {y2}, {up_op});
    down_in_op = b.Forward(p + "swiglu", OpKind::kElementwise, block, 6 * T * f,
                           3 * e * T * f);
    b.Read(gate, down_in_op);
    b.Read(up, down_in_op);
    b.Backward(down_in_op, {gate, up}, 2 * e * T * f);
    down_in = b.Saved(p + "swiglu_out", e * T * f, down_in_op, {}, {gate, up},
                      {down_in_op});
  } else {
    const int32_t fc1 = b.Forward(p + "fc1", OpKind::kMatmul, block,
                                  2 * T * h * f, e * (T * h + h * f + T * f));
    b.Read(y2, fc1);
    b.Backward(fc1, {y2}, e * T * h);
    const int32_t u = b.Saved(p + "gelu_in", e * T * f, fc1, {}, {y2}, {fc1});
    down_in_op = b.Forward(p + "gelu", OpKind::kElementwise, block, 10 * T * f,
                           2 * e * T * f);
    b.Read(u, down_in_op);
    b.Backward(down_in_op, {u}, e * T * f);
    down_in =
        b.Saved(p + "fc2_in", e * T * f, down_in_op, {}, {u}, {down_in_op});
  }
  const int32_t fc2 =
      b.Forward(p + (llama ? "down_proj" : "fc2"), OpKind::kMatmul, block,
                2 * T * f * h, e * (T * f + f * h + T * h));
  b.Read(down_in, fc2);
  b.Backward(fc2, {down_in}, e * T * f);
  if (llama) {
    const int32_t add = b.Forward(p + "residual2", OpKind::kElementwise, block,
                                  T * h, 3 * e * T * h);
    b.Read(x2, add);
    b.Backward(add, {}, e * T * h);
    return b.Saved(p + "out", e * T * h, add, {}, {down_in, x2}, {fc2, add});
  }
  const int32_t drop = b.Forward(p + "dropout2_residual", OpKind::kDropout,
                                 block, 2 * T * h, (3 * e + 1) * T * h);
  b.Read(x2, drop);
  const int32_t mask = b.Mask(p + "dropout2_mask", T * h, drop);
  b.Backward(drop, {mask}, e * T * h);
  return b.Saved(p + "out", e * T * h, drop, {}, {down_in, mask, x2},
                 {fc2, drop});
}

// `too_large` (optional) is set when a quantity would pass 2^60.
TraceSpec BuildTransformer(const WorkloadSpec& spec, const Hardware& hw,
                           bool* too_large = nullptr) {
  TraceBuilder b(hw);
  const double e = BytesPerElement(spec.precision);
  const double T = static_cast<double>(spec.batch * spec.sequence_length);
  const double h = static_cast<double>(spec.hidden);
  const double V = static_cast<double>(spec.vocabulary);
  const int32_t embed =
      b.Forward("embedding", OpKind::kEmbedding, 0, T * h, 3 * e * T * h);
  b.Backward(embed, {}, 0);
  int32_t x = b.Saved("embedding_out", e * T * h, embed, {}, {}, {embed});
  for (int32_t layer = 0; layer < spec.layers; ++layer) {
    x = AddTransformerLayer(b, spec, layer, x);
  }
  const int32_t head_block = spec.layers + 1;
  const int32_t norm = b.Forward("final_norm", OpKind::kNormalization,
                                 head_block, 5 * T * h, 2 * e * T * h);
  b.Read(x, norm);
  b.Backward(norm, {x}, e * T * h);
  const int32_t normed =
      b.Saved("lm_head_in", e * T * h, norm, {}, {x}, {norm});
  const int32_t head = b.Forward("lm_head", OpKind::kMatmul, head_block,
                                 2 * T * h * V, e * (T * h + h * V + T * V));
  b.Read(normed, head);
  b.Backward(head, {normed}, e * T * h);
  const int32_t logits =
      b.Saved("logits", e * T * V, head, {}, {normed}, {head});
  const int32_t loss = b.Forward("cross_entropy", OpKind::kLoss, head_block,
                                 5 * T * V, e * T * V);
  b.Read(logits, loss);
  b.Backward(loss, {logits}, e * T * V, 1.0);
  TraceSpec trace = b.Finish("");
  if (too_large != nullptr) *too_large = b.too_large();
  return trace;
}

TraceSpec BuildVgg16(const WorkloadSpec& spec, const Hardware& hw,
                     bool* too_large) {
  TraceBuilder b(hw);
  const double e = BytesPerElement(spec.precision);
  const double B = static_cast<double>(spec.batch);
  double side = static_cast<double>(spec.image_size);
  double channels = 3;
  const int32_t load =
      b.Forward("input", OpKind::kOther, 0, 0, 2 * e * B * side * side * 3);
  int32_t x = b.Saved("image", e * B * side * side * 3, load, {}, {}, {});
  // Each entry: output channels of a 3x3 conv, or 0 for a 2x2 max pool.
  const int kLayers[] = {64, 64,  0,   128, 128, 0,   256, 256, 256,
                         0,  512, 512, 512, 0,   512, 512, 512, 0};
  int32_t block = 0;
  int conv_index = 0;
  for (int c : kLayers) {
    const double in_elems = B * side * side * channels;
    if (c == 0) {
      side /= 2;
      const double out_elems = B * side * side * channels;
      const int32_t pool =
          b.Forward(absl::StrCat("conv", conv_index, ".pool"), OpKind::kPooling,
                    block, in_elems, e * (in_elems + out_elems));
      b.Read(x, pool);
      const int32_t y = b.Saved(absl::StrCat("conv", conv_index, ".pool_out"),
                                e * out_elems, pool, {}, {x}, {pool});
      b.Backward(pool, {x, y}, e * in_elems);
      x = y;
      continue;
    }
    ++block;
    ++conv_index;
    const double out_elems = B * side * side * c;
    const double flops = 2 * out_elems * channels * 9;
    const int32_t conv =
        b.Forward(absl::StrCat("conv", conv_index), OpKind::kConv, block, flops,
                  e * (in_elems + out_elems + 9 * channels * c));
    b.Read(x, conv);
    // ReLU is fused and in place: the saved output doubles as its mask.
    const int32_t y = b.Saved(absl::StrCat("conv", conv_index, ".relu_out"),
                              e * out_elems, conv, {}, {x}, {conv});
    b.Backward(conv, {x, y}, e * in_elems);
    x = y;
    channels = c;
  }
  double features = side * side * channels;
  for (double out : {4096.0, 4096.0, 1000.0}) {
    ++block;
    const int32_t fc = b.Forward(absl::StrCat("fc", block - 13 + 5),
                                 OpKind::kMatmul, block, 2 * B * features * out,
                                 e * (B * features + features * out + B * out));
    b.Read(x, fc);
    const int32_t y = b.Saved(absl::StrCat("fc", block - 13 + 5, ".out"),
                              e * B * out, fc, {}, {x}, {fc});
    b.Backward(fc, {x, y}, e * B * features);
    x = y;
    features = out;
  }
  const int32_t loss = b.Forward("cross_entropy", OpKind::kLoss, block,
                                 5 * B * features, e * B * features);
  b.Read(x, loss);
  b.Backward(loss, {x}, e * B * features, 1.0);
  TraceSpec trace = b.Finish("");
  if (too_large != nullptr) *too_large = b.too_large();
  return trace;
}

// The size a transformer trace of spec.layers layers would have, from the
// exact sizes of the traces with one and two layers (everything but the
// layers is fixed, and each layer adds the same operators and tensors). Names
// carry the layer index: each grows by at most one byte per extra digit.
struct GeneratedSize {
  double operators = 0;
  double tensors = 0;
  double relations = 0;  // uses plus recompute inputs
  double bytes = 0;      // serialized
};

GeneratedSize SizeOf(const TraceSpec& trace) {
  GeneratedSize size;
  size.operators = static_cast<double>(trace.operators.size());
  size.tensors = static_cast<double>(trace.tensors.size());
  for (const TensorSpec& t : trace.tensors) {
    size.relations +=
        static_cast<double>(t.use_ops.size() + t.recompute_inputs.size());
  }
  size.bytes = static_cast<double>(SerializedBytes(trace));
  return size;
}

GeneratedSize EstimateTransformerSize(WorkloadSpec spec, const Hardware& hw) {
  const double layers = spec.layers;
  spec.layers = 1;
  const GeneratedSize one = SizeOf(BuildTransformer(spec, hw));
  spec.layers = 2;
  const GeneratedSize two = SizeOf(BuildTransformer(spec, hw));
  const double digits = std::ceil(std::log10(layers + 1));
  GeneratedSize size;
  size.operators =
      one.operators + (layers - 1) * (two.operators - one.operators);
  size.tensors = one.tensors + (layers - 1) * (two.tensors - one.tensors);
  size.relations =
      one.relations + (layers - 1) * (two.relations - one.relations);
  const double names_per_layer =
      (two.operators - one.operators) + (two.tensors - one.tensors);
  // Indices are varints: past the two-layer trace each grows by at most two
  // bytes (they stay under 2^21 within the trace limits).
  size.bytes =
      one.bytes +
      (layers - 1) * ((two.bytes - one.bytes) + digits * names_per_layer) +
      2 * size.relations;
  return size;
}

}  // namespace

const std::vector<std::string>& WorkloadPresetNames() {
  static const std::vector<std::string>* names = new std::vector<std::string>{
      "bert-large", "gpt2-xl", "llama-7b", "vgg16"};
  return *names;
}

absl::StatusOr<WorkloadSpec> WorkloadPreset(absl::string_view name) {
  WorkloadSpec s;
  s.preset = std::string(name);
  if (name == "bert-large") {
    s.family = ModelFamily::kGpt;
    s.layers = 24, s.hidden = 1024, s.heads = 16, s.ffn_hidden = 4096,
    s.vocabulary = 30522;
    s.causal = false, s.batch = 32, s.sequence_length = 512;
  } else if (name == "gpt2-xl") {
    s.family = ModelFamily::kGpt;
    s.layers = 48, s.hidden = 1600, s.heads = 25, s.ffn_hidden = 6400,
    s.vocabulary = 50257;
    s.causal = true, s.batch = 8, s.sequence_length = 1024;
  } else if (name == "llama-7b") {
    s.family = ModelFamily::kLlama;
    s.layers = 32, s.hidden = 4096, s.heads = 32, s.ffn_hidden = 11008,
    s.vocabulary = 32000;
    s.causal = true, s.batch = 1, s.sequence_length = 2048;
  } else if (name == "vgg16") {
    s.family = ModelFamily::kVgg16;
    s.batch = 64, s.image_size = 224, s.precision = Precision::kFp32;
    s.flash_attention = false;
  } else {
    return absl::NotFoundError(
        absl::StrCat("unknown workload preset; valid: ",
                     absl::StrJoin(WorkloadPresetNames(), ", ")));
  }
  return s;
}

absl::StatusOr<TraceSpec> GenerateTrace(const WorkloadSpec& spec,
                                        const Hardware& hardware) {
  FieldViolations v;
  if (hardware.matmul_flops_per_second <= 0) {
    v.Add("hardware.matmul_flops_per_second",
          "must be > 0 to generate a trace");
  }
  if (hardware.hbm_bytes_per_second <= 0) {
    v.Add("hardware.hbm_bytes_per_second", "must be > 0 to generate a trace");
  }
  if (spec.batch < 1 || spec.batch > 65536)
    v.Add("workload.batch", "must be in [1, 65536]");
  if (spec.family == ModelFamily::kVgg16) {
    if (spec.image_size < 32 || spec.image_size > 4096 ||
        spec.image_size % 32 != 0) {
      v.Add("workload.image_size", "must be a multiple of 32 in [32, 4096]");
    }
  } else {
    if (spec.layers < 1 || spec.layers > 100000)
      v.Add("workload.layers", "must be in [1, 100000]");
    if (spec.hidden < 1 || spec.hidden > 1 << 20)
      v.Add("workload.hidden", "must be in [1, 2^20]");
    if (spec.heads < 1 || spec.heads > spec.hidden)
      v.Add("workload.heads", "must be in [1, hidden]");
    if (spec.ffn_hidden < 1 || spec.ffn_hidden > 1 << 22) {
      v.Add("workload.ffn_hidden", "must be in [1, 2^22]");
    }
    if (spec.vocabulary < 1 || spec.vocabulary > 1 << 24) {
      v.Add("workload.vocabulary", "must be in [1, 2^24]");
    }
    if (spec.sequence_length < 1 || spec.sequence_length > 1 << 22) {
      v.Add("workload.sequence_length", "must be in [1, 2^22]");
    }
  }
  SLACKSWAP_RETURN_IF_ERROR(v.ToStatus());
  // Bounded before anything is built: 100,000 layers took 822 MB and then
  // failed the trace limits.
  if (spec.family != ModelFamily::kVgg16 && spec.layers > 2) {
    const GeneratedSize size = EstimateTransformerSize(spec, hardware);
    if (size.bytes > kMaxGeneratedTraceBytes ||
        size.operators > kMaxOperators || size.tensors > kMaxTensors ||
        size.relations > kMaxRelations) {
      const double bytes_per_layer =
          size.bytes / static_cast<double>(spec.layers);
      return TooLargeField(
          "workload.layers",
          absl::StrFormat(
              "the trace would hold %.0f operators and %.0f MiB; at most %d "
              "MiB and %d operators: about %.0f layers of this model",
              size.operators, size.bytes / (1 << 20),
              kMaxGeneratedTraceBytes >> 20, kMaxOperators,
              std::floor(kMaxGeneratedTraceBytes / bytes_per_layer)));
    }
  }
  bool too_large = false;
  TraceSpec trace = spec.family == ModelFamily::kVgg16
                        ? BuildVgg16(spec, hardware, &too_large)
                        : BuildTransformer(spec, hardware, &too_large);
  if (too_large) {
    // Every size and time grows with the batch and the tokens (or the image):
    // name the fields that scale them.
    const std::string why =
        "with the other parameters, an operator's work, a tensor's size or a "
        "duration (or their sums) would pass 2^60";
    FieldViolations over;
    over.Add("workload.batch", why);
    over.Add(spec.family == ModelFamily::kVgg16 ? "workload.image_size"
                                                : "workload.sequence_length",
             why);
    return over.ToStatus();
  }
  SLACKSWAP_RETURN_IF_ERROR(AddOffloadTraffic(spec, trace));
  std::string name = absl::StrCat(spec.preset.empty() ? "custom" : spec.preset,
                                  " batch ", spec.batch);
  if (spec.family != ModelFamily::kVgg16) {
    absl::StrAppend(&name, " seq ", spec.sequence_length, " layers ",
                    spec.layers);
  }
  absl::StrAppend(&name, " ", PrecisionName(spec.precision),
                  spec.flash_attention ? " flash" : "", " on ", hardware.name);
  if (spec.offload != Offload::kNone)
    absl::StrAppend(&name, " offload ", OffloadName(spec.offload));
  trace.name = name.substr(0, kMaxNameBytes);
  // The estimate above keeps the build bounded; the built size decides.
  if (const int64_t bytes = SerializedBytes(trace);
      bytes > kMaxGeneratedTraceBytes) {
    return TooLargeField(
        "workload.layers",
        absl::StrFormat("the trace holds %.1f MiB; at most %d MiB",
                        static_cast<double>(bytes) / (1 << 20),
                        kMaxGeneratedTraceBytes >> 20));
  }
  // The generated trace obeys every trace rule; sizes can still pass the
  // limits.
  SLACKSWAP_RETURN_IF_ERROR(ValidateTrace(trace).status());
  return trace;
}

TraceSummary Summarize(const TraceSpec& trace, const Hardware& hardware) {
  // Sums in 128 bits, saturated into int64: flops are informational and not
  // bounded by the trace rules.
  absl::int128 saved = 0, iteration = 0, forward = 0, flops = 0;
  for (const TensorSpec& t : trace.tensors) saved += t.size_bytes;
  for (const OperatorSpec& op : trace.operators) {
    iteration += op.duration_ns;
    if (op.phase == Phase::kForward) {
      forward += op.duration_ns;
      flops += op.flops;
    }
  }
  auto saturated = [](absl::int128 v) {
    return static_cast<int64_t>(
        std::clamp<absl::int128>(v, std::numeric_limits<int64_t>::min(),
                                 std::numeric_limits<int64_t>::max()));
  };
  TraceSummary s;
  s.saved_bytes = saturated(saved);
  s.iteration_ns = saturated(iteration);
  s.forward_ns = saturated(forward);
  s.forward_flops = saturated(flops);
  if (s.saved_bytes > 0) {
    s.flops_per_saved_byte =
        static_cast<double>(s.forward_flops) / s.saved_bytes;
    s.hideable_fraction = static_cast<double>(hardware.d2h_bytes_per_second) *
                          1e-9 * static_cast<double>(s.forward_ns) /
                          static_cast<double>(s.saved_bytes);
  }
  return s;
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
    case Precision::kFp32:
      return "fp32";
  }
  return "";
}

std::optional<Precision> PrecisionFromName(absl::string_view name) {
  for (Precision p : {Precision::kBf16, Precision::kFp16, Precision::kFp32}) {
    if (name == PrecisionName(p)) return p;
  }
  return std::nullopt;
}

}  // namespace slackswap
