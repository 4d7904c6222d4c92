// A workload preset's trace with one layer, a batch of `batch` sequences of
// `sequence_length` tokens and flash attention on `hardware`: the small
// preset traces (13 tensors for BERT-Large and GPT-2 XL) that the anytime
// search's tests plan against the exact optimum.
#ifndef SLACKSWAP_TESTS_PLANNER_PRESET_TRACES_H_
#define SLACKSWAP_TESTS_PLANNER_PRESET_TRACES_H_

#include <cstdint>
#include <string>

#include "simulator/hardware.h"
#include "simulator/trace.h"
#include "simulator/trace_validation.h"
#include "simulator/workload.h"

namespace slackswap::testing {

inline Trace OneLayerPreset(const std::string& preset, int64_t batch,
                            int64_t sequence_length, const Hardware& hardware) {
  WorkloadSpec spec = *WorkloadPreset(preset);
  spec.layers = 1;
  spec.batch = batch;
  spec.sequence_length = sequence_length;
  spec.flash_attention = true;
  return *ValidateTrace(*GenerateTrace(spec, hardware));
}

}  // namespace slackswap::testing

#endif  // SLACKSWAP_TESTS_PLANNER_PRESET_TRACES_H_
