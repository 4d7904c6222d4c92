#include <algorithm>
#include <iostream>
#include <string>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "client/cli_commands.h"
#include "client/cli_flags.h"
#include "client/cli_inputs.h"
#include "client/cli_output.h"
#include "client/report.h"
#include "simulator/hardware.h"
#include "simulator/workload.h"

namespace slackswap {

namespace {

absl::Status PrintCalibrationRow(const std::string& preset,
                                 int64_t sequence_length,
                                 const std::string& gpu) {
  SLACKSWAP_ASSIGN_OR_RETURN(WorkloadSpec spec, WorkloadPreset(preset));
  if (sequence_length > 0) spec.sequence_length = sequence_length;
  SLACKSWAP_ASSIGN_OR_RETURN(Hardware hw, HardwarePreset(gpu));
  SLACKSWAP_ASSIGN_OR_RETURN(TraceSpec trace, GenerateTrace(spec, hw));
  const TraceSummary s = Summarize(trace, hw);
  const std::string shape =
      spec.family == ModelFamily::kVgg16
          ? absl::StrCat("batch ", spec.batch, ", ", spec.image_size, "x",
                         spec.image_size)
          : absl::StrCat("batch ", spec.batch, " x ", spec.sequence_length);
  std::cout << absl::StrFormat(
      "| %s | %s | %s | %d | %s | %.0f | %s | %s | %.1f%% |\n", preset, shape,
      gpu, trace.operators.size(), Gigabytes(s.saved_bytes),
      s.flops_per_saved_byte, Millis(s.forward_ns), Millis(s.iteration_ns),
      100 * s.hideable_fraction);
  return absl::OkStatus();
}

}  // namespace

int Presets() {
  std::cout
      << "| Hardware | D2H GB/s | H2D GB/s | Latency us | GPU memory GiB | "
         "Matmul TFLOP/s | HBM GB/s |\n|---|---|---|---|---|---|---|\n";
  for (const std::string& name : HardwarePresetNames()) {
    const Hardware h = *HardwarePreset(name);
    std::cout << absl::StrFormat(
        "| %s | %.1f | %.1f | %.0f | %.0f | %.1f | %.0f |\n", name,
        h.d2h_bytes_per_second / 1e9, h.h2d_bytes_per_second / 1e9,
        h.transfer_latency_ns / 1e3, h.gpu_memory_bytes / 1073741824.0,
        h.matmul_flops_per_second / 1e12, h.hbm_bytes_per_second / 1e9);
  }
  std::cout << "\n| Workload | Shape | Hardware | Ops | Saved | FLOPs/saved "
               "byte | Forward | "
               "Ideal iteration | Hideable "
               "|\n|---|---|---|---|---|---|---|---|---|\n";
  struct Row {
    const char* preset;
    int64_t sequence_length;
    const char* gpu;
  };
  const Row rows[] = {
      {"gpt2-xl", 0, "a100"},      {"bert-large", 0, "a100"},
      {"llama-7b", 2048, "a100"},  {"llama-7b", 4096, "a100"},
      {"llama-7b", 8192, "a100"},  {"llama-7b", 16384, "a100"},
      {"llama-7b", 32768, "a100"}, {"vgg16", 0, "titan-x"},
      {"vgg16", 0, "a100"},        {"gpt2-xl", 0, "v100"},
      {"gpt2-xl", 0, "h100"},      {"gpt2-xl", 0, "gh200"},
  };
  for (const Row& row : rows) {
    absl::Status status =
        PrintCalibrationRow(row.preset, row.sequence_length, row.gpu);
    if (!status.ok()) return ExitFor(status, kFailureExit);
  }
  return 0;
}

int Report() {
  ReportOptions options;
  options.out_dir = absl::GetFlag(FLAGS_out_dir);
  options.quick = absl::GetFlag(FLAGS_quick);
  options.genetic_evaluations = absl::GetFlag(FLAGS_genetic_evaluations);
  if (options.quick) {
    options.genetic_evaluations =
        std::min<int64_t>(options.genetic_evaluations, 600);
    options.swapadvisor_evaluations = 300;
  }
  const absl::Status status = WriteReport(options);
  if (!status.ok()) return ExitFor(status, kFailureExit);
  std::cout << "wrote " << options.out_dir << "/results.md\n";
  return 0;
}

}  // namespace slackswap
