"""What the runtime tests (runtime_test.py, runtime_behaviour_test.py) share:
the slackswap-server they plan against, the models, plans of decisions, a
step run plainly or under a runtime, and the checks of what it leaves.

Each test file runs through main here: TEST.py --server BIN --repo ROOT.
"""
import argparse
import copy
import os
import re
import subprocess
import sys
import unittest

import torch

ARGS = None
SERVER = None


def setup_paths(repo):
    sys.path.insert(0, os.path.join(repo, "client", "python"))
    sys.path.insert(0, os.path.join(repo, "client", "python", "examples"))
    os.environ["SLACKSWAP_PROTO_DIR"] = os.path.join(repo, "proto")


def start_server():
    proc = subprocess.Popen([ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "",
                             "--call_log", "none"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    match = re.match(r"listening on port (\d+)", line)
    if not match:
        proc.kill()
        raise RuntimeError("server did not start: " + line)
    return proc, f"127.0.0.1:{match.group(1)}"


def make(which):
    """(model, input, loss_fn), deterministic."""
    import models
    torch.manual_seed(0)
    if which in ("gpt", "bert"):
        model = getattr(models, which)(2, 32, 4, 16, 64)
        x = torch.randint(0, 64, (2, 16))
        return model, x, models.language_model_loss(x)
    if which == "resnet50":
        model = models.resnet50()
        if model is None:
            return None
        return model, torch.randn(2, 3, 32, 32), lambda out: out.logsumexp(-1).mean()
    if which in ("lstm", "gru"):
        model = getattr(models, which)()
        x = torch.randint(0, 64, (2, 12))
        return model, x, models.language_model_loss(x)
    if which == "vit":
        model = models.vit()
        labels = torch.randint(0, 10, (2,))
        return model, torch.randn(2, 3, 32, 32), \
            lambda out: torch.nn.functional.cross_entropy(out, labels)
    raise ValueError(which)


def uniform_copy(trace):
    """The trace as the CPU runtime's clock sees it: every operator and
    rebuild 1 ms."""
    out = copy.deepcopy(trace)
    for op in out.operators:
        op.duration_ns = 1_000_000
    for t in out.tensors:
        if not t.recompute_forbidden:
            t.recompute_duration_ns = 1_000_000
    return out


def fast_link():
    from slackswap.v1 import hardware_pb2
    return hardware_pb2.Hardware(name="fast", d2h_bytes_per_second=10**18,
                                 h2d_bytes_per_second=10**18, transfer_latency_ns=0,
                                 gpu_memory_bytes=1 << 40)


def forward_ops(trace):
    from slackswap.v1 import trace_pb2
    return sum(1 for op in trace.operators if op.phase == trace_pb2.PHASE_FORWARD)


def decisions_plan(trace, kind, rng):
    """A Plan of decisions: "swap" (every tensor that may be), "recompute"
    (likewise) or "random" (random decisions and prefetch issue points)."""
    from slackswap.v1 import plan_pb2
    nf = forward_ops(trace)
    plan = plan_pb2.Plan()
    for t in trace.tensors:
        allowed = [plan_pb2.DECISION_KEEP]
        if not t.swap_forbidden:
            allowed.append(plan_pb2.DECISION_SWAP)
        if not t.recompute_forbidden:
            allowed.append(plan_pb2.DECISION_RECOMPUTE)
        if kind == "swap":
            d = plan_pb2.DECISION_SWAP if plan_pb2.DECISION_SWAP in allowed else allowed[0]
        elif kind == "recompute":
            d = plan_pb2.DECISION_RECOMPUTE if plan_pb2.DECISION_RECOMPUTE in allowed \
                else allowed[0]
        else:
            d = rng.choice(allowed)
        tp = plan.tensors.add(decision=d)
        if d == plan_pb2.DECISION_SWAP:
            last_forward = max([t.producer_op] + [u for u in t.use_ops if u < nf])
            tp.prefetch_issue_op = rng.randint(last_forward + 1, nf) if kind == "random" else nf
    return plan


class Step:
    """Runs the model's step from the same state, plainly or in a runtime."""

    def __init__(self, which):
        self.model, self.x, self.loss_fn = make(which)
        self.state = copy.deepcopy(self.model.state_dict())

    def __call__(self, runtime=None, x=None):
        model = self.model
        model.load_state_dict(self.state)
        model.zero_grad(set_to_none=True)
        torch.manual_seed(1)
        loss_fn = self.loss_fn
        if x is not None:
            import models
            loss_fn = models.language_model_loss(x)
        x = self.x if x is None else x
        if runtime is None:
            loss = loss_fn(model(x))
            loss.backward()
        else:
            with runtime:
                loss = loss_fn(model(x))
                loss.backward()
        return (loss.detach().clone(), [p.grad.clone() for p in model.parameters()],
                [b.clone() for b in model.buffers()])


def assert_bitwise(test, expected, got, what):
    test.assertTrue(torch.equal(expected[0], got[0]), f"{what}: loss")
    for i, (a, b) in enumerate(zip(expected[1], got[1])):
        test.assertTrue(torch.equal(a, b), f"{what}: gradient {i}")
    for i, (a, b) in enumerate(zip(expected[2], got[2])):
        test.assertTrue(torch.equal(a, b), f"{what}: buffer {i}")


def assert_nothing_left(test, runtime):
    from torch.utils._python_dispatch import _get_current_dispatch_mode
    test.assertIsNone(_get_current_dispatch_mode())
    packs, dispatches = runtime.packs, runtime.dispatches
    x = torch.ones(3, requires_grad=True)
    x.exp().sum().backward()
    test.assertEqual(runtime.packs, packs, "a saved-tensor hook is still installed")
    test.assertEqual(runtime.dispatches, dispatches, "the dispatch mode is still set")


def main():
    """Parses the arguments (into ARGS), starts the server (at SERVER), runs
    the tests of __main__ and exits 0 if they pass."""
    global ARGS, SERVER
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--repo", required=True)
    ARGS, rest = parser.parse_known_args()
    setup_paths(ARGS.repo)
    from slackswap_client import stubs
    stubs.load()
    proc, SERVER = start_server()
    try:
        program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
    failed = len(program.result.failures) + len(program.result.errors)
    skipped = len(program.result.skipped)
    print(f"{program.result.testsRun - failed - skipped} passed, {failed} failed, "
          f"{skipped} skipped")
    sys.exit(0 if program.result.wasSuccessful() else 1)
