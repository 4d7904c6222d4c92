"""Formats Google Benchmark JSON (with repetitions) as docs/benchmarks.md."""
import json
import sys

TARGETS_US = {
    "BM_ReplayGpt2XlMixedPlan": 200.0,
    "BM_SimulateGpt2XlMixedPlan": 200.0,
}

DESCRIPTIONS = {
    "BM_ReplayGpt2XlMixedPlan": "replay of the GPT-2 XL trace under a mixed plan "
                                "(schedule derived once, as a planner's inner loop)",
    "BM_SimulateGpt2XlMixedPlan": "Simulate as callers see it: plan validation, "
                                  "schedule derivation and replay",
    "BM_SimulateGpt2XlWithTimeline": "the same, recording the full timeline",
    "BM_TraceFromProtoGpt2Xl": "validation and conversion of the wire-form trace",
    "BM_GenerateGpt2Xl": "generation of the GPT-2 XL / A100 trace",
}


def main(path):
    data = json.load(open(path))
    context = data["context"]
    medians = {}
    for b in data["benchmarks"]:
        if b.get("aggregate_name") == "median":
            medians[b["run_name"]] = b["real_time"]
    lines = [
        "# Benchmarks",
        "",
        "Regenerate with `bash scripts/benchmarks.sh` (builds Release, runs each Google Benchmark",
        "target pinned to one core with 7 repetitions, and rewrites this file). Times are medians",
        "of the repetitions; this machine is shared and noisy, so compare ratios within one run.",
        "",
        f"Machine: {context.get('num_cpus')} CPUs at {context.get('mhz_per_cpu')} MHz; "
        f"run {context.get('date')}; project code built Release.",
        "",
        "## Simulator (`tests/benchmarks/event_model_benchmark.cc`)",
        "",
        "GPT-2 XL, batch 8 x 1024, A100 preset: 968 operators, 483 saved tensors. The mixed plan",
        "swaps the layer outputs, recomputes the normalization outputs and both MLP activations,",
        "and keeps the rest, at 50% of the all-keep peak.",
        "",
        "| Benchmark | What | Median | Target |",
        "|---|---|---|---|",
    ]
    for name, median in medians.items():
        target = TARGETS_US.get(name)
        target_text = f"< {target:.0f} us" if target else ""
        if target:
            target_text += " (met)" if median < target else " (MISSED)"
        lines.append(f"| `{name}` | {DESCRIPTIONS.get(name, '')} | {median:.1f} us | {target_text} |")
    print("\n".join(lines))


if __name__ == "__main__":
    main(sys.argv[1])
