"""The PyTorch runtime's overhead on CPU, against an unmodified step.

One thread, pinned by the caller (scripts/benchmarks.sh runs it under
taskset). A GPT-style model (4 layers, hidden 128, 4 heads, sequence 64,
batch 4, float32). Rounds interleave the variants so that background load
falls on all alike; medians over rounds:

- plain: the step as written;
- keep: under a Runtime with an all-keep plan, after its first step: a plan
  that moves nothing tracks no operator then, and checks each saved tensor
  against the first step's (the saved-tensor hooks only);
- keep, tracked: the same plan with track_ops="always": the dispatch mode,
  the dataflow log and the event-model bookkeeping at every operator, what
  every step of a plan that moves tensors pays before its copies;
- slackswap 50%: SlackSwap's plan at half the activation peak: the copies to
  host and back (synchronous on CPU) and the replays too.

Step times are the thread's CPU time (time.thread_time: one thread, and it
leaves out the time the virtual machine's host takes back, which wall-clock
medians on this machine do not). Writes JSON to --out: per variant the median
step time and the median of
its per-round difference to the plain step of the same round (paired, so
that load that falls on one round falls on both), and the trace's operator
and saved-tensor counts.

Usage: runtime_benchmark.py --server BIN --repo ROOT --out FILE [--rounds N]
"""
import argparse
import gc
import json
import os
import re
import statistics
import subprocess
import sys
import time
import timeit

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--repo", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.repo, "client", "python"))
    sys.path.insert(0, os.path.join(args.repo, "client", "python", "examples"))
    os.environ["SLACKSWAP_PROTO_DIR"] = os.path.join(args.repo, "proto")
    torch.set_num_threads(1)
    import models
    from slackswap_client import Client, Runtime, profile, stubs
    stubs.load()
    from slackswap.v1 import plan_pb2

    torch.manual_seed(0)
    model = models.gpt(layers=4, hidden=128, heads=4, seq=64, vocab=512)
    tokens = torch.randint(0, 512, (4, 64))
    loss_fn = models.language_model_loss(tokens)
    trace = profile(model, (tokens,), loss_fn)

    proc = subprocess.Popen([args.server, "--listen", "127.0.0.1:0", "--metrics", "",
                             "--call_log", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        port = re.match(r"listening on port (\d+)", proc.stdout.readline()).group(1)
        with Client(f"127.0.0.1:{port}", deadline=60) as client:
            report = client.plan(trace, budget_fraction=0.5).report
            keep = plan_pb2.Plan()
            for _ in trace.tensors:
                keep.tensors.add(decision=plan_pb2.DECISION_KEEP)
            keep_response = client.simulate(trace, keep, budget_bytes=1 << 50)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()

    runtimes = {
        "keep": Runtime(trace, keep_response.plan, budget_bytes=1 << 50),
        "keep, tracked": Runtime(trace, keep_response.plan, budget_bytes=1 << 50,
                                 track_ops="always"),
        "slackswap 50%": Runtime(trace, report),
    }

    def step(runtime):
        model.zero_grad(set_to_none=True)
        gc.collect()  # what an earlier step left is not collected in this one
        start = time.thread_time()
        if runtime is None:
            loss_fn(model(tokens)).backward()
        else:
            with runtime:
                loss_fn(model(tokens)).backward()
        return time.thread_time() - start

    times = {"plain": [], "keep": [], "keep, tracked": [], "slackswap 50%": []}
    for name in times:  # warm up
        step(runtimes.get(name))
    packs_before = runtimes["keep"].packs
    step(runtimes["keep"])
    packs_per_step = runtimes["keep"].packs - packs_before
    for _ in range(args.rounds):
        for name in times:
            times[name].append(step(runtimes.get(name)))
    # The untracked step's own work alone, free of the step's noise: its
    # saved-tensor hook over the tensors one step saves.
    saved = []

    def remember(t):
        saved.append(t)
        return t

    model.zero_grad(set_to_none=True)
    with torch.autograd.graph.saved_tensors_hooks(remember, lambda t: t):
        loss_fn(model(tokens)).backward()
    keep = runtimes["keep"]

    def hooks():
        keep._saves = 0
        for t in saved:
            keep._pack_untracked(t)

    repeats = 2000
    hook_us = 1e6 * statistics.median(timeit.repeat(hooks, number=repeats, repeat=5)) / \
        repeats / len(saved)
    result = {
        "model": "GPT, 4 layers, hidden 128, 4 heads, sequence 64, batch 4, float32",
        "untracked_hook_us_per_saved_tensor": hook_us,
        "operators": len(trace.operators),
        "saved_tensors": len(trace.tensors),
        "packs_per_step": packs_per_step,
        "rounds": args.rounds,
        "median_ms": {name: 1e3 * statistics.median(v) for name, v in times.items()},
        "median_over_plain_ms": {
            name: 1e3 * statistics.median(a - b for a, b in zip(v, times["plain"]))
            for name, v in times.items() if name != "plain"},
        "tracked": {name: r.tracked for name, r in runtimes.items()},
        "rounds_ms": {name: [round(1e3 * x, 1) for x in v] for name, v in times.items()},
        "decisions": {
            "swap": sum(1 for t in report.plan.tensors if t.decision == plan_pb2.DECISION_SWAP),
            "recompute": sum(1 for t in report.plan.tensors
                             if t.decision == plan_pb2.DECISION_RECOMPUTE),
        },
        "torch": torch.__version__,
    }
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result["median_ms"]))


if __name__ == "__main__":
    main()
