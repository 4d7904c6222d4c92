"""Measures the runtime on a CUDA machine against the planner's prediction and
writes a Markdown report (docs/measurements.md).

For a GPT-style model on the GPU: the link's bandwidth (pinned copies, each
direction), one profiled step (timing "measured": each operator synchronized),
then for each budget SlackSwap's plan for that hardware, and the step run
plainly and under the runtime, `--steps` times each after a warm-up:

- step time (median; CUDA events around the step) against the plan's
  predicted iteration time and the plain step;
- activation memory: torch.cuda.max_memory_allocated during the step minus
  what was allocated at its start (parameters, gradients, the batch), against
  the budget, the plan's predicted peak and the plain step's;
- reserved memory: torch.cuda.max_memory_reserved during the step minus what
  was reserved at its start (the cache emptied first), against the plan's
  predicted peak reserved bytes (the caching allocator model, issue 17).

    bash scripts/build.sh       # the server binary
    /usr/bin/python3 client/python/examples/measure_runtime.py \\
        --server-bin build/server/slackswap-server --out docs/measurements.md

--cpu-smoke runs the same flow with a tiny model on CPU (the test suite does,
so that the script stays runnable); its numbers mean nothing.
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, HERE)


def link_rates(device, nbytes=1 << 28, runs=5):
    """(d2h, h2d) bytes per second, pinned host memory, medians."""
    if device.type != "cuda":
        return 10**10, 10**10
    dev = torch.empty(nbytes, dtype=torch.uint8, device=device)
    host = torch.empty(nbytes, dtype=torch.uint8, pin_memory=True)
    rates = {}
    for direction in ("d2h", "h2d"):
        samples = []
        for _ in range(runs + 1):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            if direction == "d2h":
                host.copy_(dev, non_blocking=True)
            else:
                dev.copy_(host, non_blocking=True)
            end.record()
            torch.cuda.synchronize()
            samples.append(nbytes / (start.elapsed_time(end) / 1e3))
        rates[direction] = int(statistics.median(samples[1:]))
    return rates["d2h"], rates["h2d"]


def timed_step(device, body):
    """(seconds, activation bytes, reserved bytes) of one step."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_allocated()
        base_reserved = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        start = time.perf_counter()
        body()
        torch.cuda.synchronize()
        return (time.perf_counter() - start, torch.cuda.max_memory_allocated() - base,
                torch.cuda.max_memory_reserved() - base_reserved)
    start = time.perf_counter()
    body()
    return time.perf_counter() - start, 0, 0


def parse_args():
    """The command line, with --cpu-smoke's tiny model: (args, device)."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-bin", required=True)
    parser.add_argument("--out", default="docs/measurements.md")
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--budgets", default="0.5,0.7")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--cpu-smoke", action="store_true")
    args = parser.parse_args()
    if args.cpu_smoke:
        device = torch.device("cpu")
        args.layers, args.hidden, args.heads, args.seq, args.batch = 2, 32, 4, 16, 2
        args.steps = 2
    elif not torch.cuda.is_available():
        raise SystemExit("no CUDA device (use --cpu-smoke to check the script on CPU)")
    else:
        device = torch.device("cuda")
    return args, device


def profiled_step(args, device):
    """The step to measure, (model, tokens, loss_fn); the hardware, with the
    link measured; and the step's trace: (step, hardware, trace)."""
    os.environ.setdefault("SLACKSWAP_PROTO_DIR",
                          os.path.normpath(os.path.join(HERE, "..", "..", "..", "proto")))
    import models
    from slackswap_client import profile, stubs
    stubs.load()
    from slackswap.v1 import hardware_pb2

    torch.manual_seed(0)
    vocab = 64 if args.cpu_smoke else 4096
    model = models.gpt(args.layers, args.hidden, args.heads, args.seq, vocab).to(device)
    tokens = torch.randint(0, vocab, (args.batch, args.seq), device=device)
    loss_fn = models.language_model_loss(tokens)
    d2h, h2d = link_rates(device)
    hardware = hardware_pb2.Hardware(
        name=torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
        d2h_bytes_per_second=d2h, h2d_bytes_per_second=h2d, transfer_latency_ns=10_000,
        gpu_memory_bytes=torch.cuda.get_device_properties(0).total_memory
        if device.type == "cuda" else 1 << 40)
    model.zero_grad(set_to_none=True)
    trace = profile(model, (tokens,), loss_fn, timing="measured")
    return (model, tokens, loss_fn), hardware, trace


def measure_plans(args, device, step, hardware, trace):
    """The step run plainly, then under SlackSwap's plan for each budget (from
    a server started here): ((seconds, activation bytes) of the plain step,
    rows of (fraction, report, seconds, activation, reserved), the last three
    None where the budget has no plan)."""
    from slackswap_client import Client, Runtime
    from slackswap.v1 import simulation_pb2
    model, tokens, loss_fn = step

    def plain():
        model.zero_grad(set_to_none=True)
        loss_fn(model(tokens)).backward()

    def under(runtime):
        def body():
            model.zero_grad(set_to_none=True)
            with runtime:
                loss_fn(model(tokens)).backward()
        return body

    def measure(body):
        body()  # warm-up
        samples = [timed_step(device, body) for _ in range(args.steps)]
        return (statistics.median(s[0] for s in samples), max(s[1] for s in samples),
                max(s[2] for s in samples))

    proc = subprocess.Popen([args.server_bin, "--listen", "127.0.0.1:0", "--metrics", "",
                             "--call_log", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rows = []
    try:
        port = re.match(r"listening on port (\d+)", proc.stdout.readline()).group(1)
        with Client(f"127.0.0.1:{port}", deadline=120) as client:
            plain_s, plain_bytes, _ = measure(plain)
            physics = simulation_pb2.Physics(allocator=simulation_pb2.ALLOCATOR_MODEL_CACHING)
            for fraction in [float(f) for f in args.budgets.split(",")]:
                response = client.plan(trace, hardware, budget_fraction=fraction,
                                       physics=physics)
                report = response.report
                if report.outcome != 1:
                    rows.append((fraction, report, None, None, None))
                    continue
                runtime = Runtime(trace, report)
                seconds, activation, reserved = measure(under(runtime))
                rows.append((fraction, report, seconds, activation, reserved))
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
    return (plain_s, plain_bytes), rows


def report_lines(args, hardware, trace, plain, rows):
    """The Markdown report of the measurements, line by line."""
    d2h, h2d = hardware.d2h_bytes_per_second, hardware.h2d_bytes_per_second
    plain_s, plain_bytes = plain
    saved = sum(t.size_bytes for t in trace.tensors)
    ideal_ms = sum(op.duration_ns for op in trace.operators) / 1e6
    lines = [
        "# Measurements: the runtime on a GPU",
        "",
        "Regenerate on a CUDA machine with",
        "`/usr/bin/python3 client/python/examples/measure_runtime.py --server-bin "
        "build/server/slackswap-server --out docs/measurements.md` "
        "(after `bash scripts/build.sh`).",
        "",
        f"Run {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')} on "
        f"{hardware.name}, PyTorch {torch.__version__}. Link (pinned, median): D2H "
        f"{d2h / 1e9:.1f} GB/s, H2D {h2d / 1e9:.1f} GB/s.",
        f"Model: GPT-style, {args.layers} layers, hidden {args.hidden}, {args.heads} heads, "
        f"sequence {args.seq}, batch {args.batch}, float32: {len(trace.operators)} operators, "
        f"{len(trace.tensors)} saved tensors, {saved / 2**20:.1f} MiB saved; profiled step "
        f"(operators synchronized) {ideal_ms:.1f} ms.",
        "",
        f"Plain step: {1e3 * plain_s:.1f} ms, activation memory {plain_bytes / 2**20:.1f} MiB "
        "(max allocated during the step minus allocated at its start).",
        "",
        "| Budget | Predicted step | Measured step | vs plain | Budget bytes | Predicted peak "
        "| Measured activation memory | Predicted reserved | Measured reserved "
        "| Swapped / recomputed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for fraction, report, seconds, activation, reserved in rows:
        m = report.metrics
        if seconds is None:
            lines.append(f"| {fraction:.0%} | infeasible: {report.reason} | | | | | | | | |")
            continue
        lines.append(
            f"| {fraction:.0%} | {m.iteration_ns / 1e6:.1f} ms | {1e3 * seconds:.1f} ms | "
            f"{seconds / plain_s:.2f}x | {m.budget_bytes / 2**20:.1f} MiB | "
            f"{m.peak_resident_bytes / 2**20:.1f} MiB | {activation / 2**20:.1f} MiB | "
            f"{m.peak_reserved_bytes / 2**20:.1f} MiB | {reserved / 2**20:.1f} MiB | "
            f"{m.swapped_bytes / 2**20:.1f} / {m.recomputed_bytes / 2**20:.1f} MiB |")
    lines += [
        "",
        "The measured activation memory includes what the plan does not manage: the "
        "temporaries of each operator, gradients in flight and the allocator's rounding. "
        "The measured reserved memory is what the step made the caching allocator reserve "
        "from an emptied cache; the prediction models the saved activations' and "
        "workspaces' allocations only.",
    ]
    return lines


def main():
    args, device = parse_args()
    step, hardware, trace = profiled_step(args, device)
    plain, rows = measure_plans(args, device, step, hardware, trace)
    lines = report_lines(args, hardware, trace, plain, rows)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
