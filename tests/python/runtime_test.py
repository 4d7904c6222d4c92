"""Tests of the PyTorch runtime (client/python/slackswap_client/runtime.py) on
CPU, against a real slackswap-server.

For GPT- and BERT-style transformers, torchvision's ResNet-50, an LSTM, a GRU
and a ViT with dropout, at budgets 0.2/0.3/0.5/0.7 (SlackSwap's plans for the
A100, run at the CPU clock's speeds) and all-swap, all-recompute and
random plans: the step run under the runtime gives the loss, every gradient
and every buffer bitwise equal to an unmodified step; the saved bytes the
runtime holds, operator by operator and rebuild by rebuild, equal the event
model's resident bytes (Simulate's timeline) for the same plan on the trace
with equal operator times and a fast link (the CPU runtime's clock), and
never exceed the budget, also with copies that complete late (the CUDA
path's bookkeeping); no hook or mode is left behind, after a step or an
exception inside it. Small models that write storages in place in awkward
ways likewise, under all-swap, all-recompute and random plans. The examples
run through: train_gpt.py bitwise equal to its plain loop, and
measure_runtime.py (the CUDA measurement) on CPU.

The runtime in the habits of a training loop: runtime_behaviour_test.py.

Usage: runtime_test.py --server BIN --repo ROOT
"""
import copy
import os
import random
import re
import subprocess
import sys
import unittest
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import runtime_support  # noqa: E402  (the server, ARGS once parsed, main)
from runtime_support import (Step, assert_bitwise, assert_nothing_left,  # noqa: E402
                             decisions_plan, fast_link, make, uniform_copy)


class RuntimeModelsTest(unittest.TestCase):
    """The runtime on four models, each at SlackSwap's budgets and under
    all-swap, all-recompute and random plans."""

    def check_model(self, which):
        from slackswap.v1 import planning_pb2, simulation_pb2
        from slackswap_client import Client, Runtime, profile
        if make(which) is None:
            self.skipTest("python3-torchvision is not installed")
        step = Step(which)
        trace = profile(step.model, (step.x,), step.loss_fn)
        plain = step()
        uniform = uniform_copy(trace)
        cases = []
        rng = random.Random(7)
        with Client(runtime_support.SERVER, deadline=60) as client:
            planned = 0
            for fraction in (0.2, 0.3, 0.5, 0.7):
                # SlackSwap's plan for the A100, run at the CPU clock's speeds
                # (copies end at once, every operator as long as the others):
                # a plan that completes at one speed completes within its
                # budget at every other (docs/event-model.md); and one made
                # for the CPU clock.
                report = client.plan(trace, "a100", budget_fraction=fraction).report
                if report.outcome == planning_pb2.PLAN_OUTCOME_PLANNED:
                    planned += 1
                    cases.append((f"a100 {fraction}", report.plan, report.metrics.budget_bytes))
                report = client.plan(uniform, fast_link(), budget_fraction=fraction).report
                if report.outcome == planning_pb2.PLAN_OUTCOME_PLANNED:
                    cases.append((f"cpu clock {fraction}", report.plan,
                                  report.metrics.budget_bytes))
            self.assertGreaterEqual(planned, 2, f"{which}: SlackSwap planned too few budgets")
            for kind in ("swap", "recompute", "random", "random"):
                plan = decisions_plan(trace, kind, rng)
                unlimited = client.simulate(uniform, plan, fast_link(), budget_bytes=1 << 50)
                # At the plan's own peak: the budget binds where it peaks.
                cases.append((kind, unlimited.plan, unlimited.metrics.peak_resident_bytes))
            for name, plan, budget in cases:
                what = f"{which} {name}"
                simulated = client.simulate(uniform, plan, fast_link(), budget_bytes=budget,
                                            timeline=True)
                # Every plan completes at the CPU clock: the A100's plans
                # made for other speeds, and the random plans at their own
                # peak.
                self.assertEqual(simulated.metrics.outcome,
                                 simulation_pb2.SIMULATION_OUTCOME_COMPLETED, what)
                runtime = Runtime(trace, simulated.plan, budget_bytes=budget)
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # no warning, no BudgetError
                    assert_bitwise(self, plain, step(runtime), what)
                assert_nothing_left(self, runtime)
                expected = [("op" if e.kind == simulation_pb2.TIMELINE_EVENT_KIND_OP
                             else "rebuild", e.index, e.resident_bytes)
                            for e in simulated.timeline.events
                            if e.kind in (simulation_pb2.TIMELINE_EVENT_KIND_OP,
                                          simulation_pb2.TIMELINE_EVENT_KIND_REBUILD)]
                first = next((i for i, (a, b) in enumerate(zip(runtime.ledger, expected))
                              if a != b), None)
                self.assertEqual(len(runtime.ledger), len(expected), what)
                self.assertIsNone(first, f"{what}: step {first}: runtime "
                                  f"{runtime.ledger[first] if first is not None else ''}, "
                                  f"event model {expected[first] if first is not None else ''}")
                self.assertLessEqual(runtime.peak_bytes, budget, what)
                self.assertEqual(runtime.peak_bytes, simulated.metrics.peak_resident_bytes, what)
                # The CUDA path's bookkeeping (offloads complete when their
                # events do, polled; a started prefetch is waited for on the
                # device), on CPU with events that complete after 3 polls.
                runtime = Runtime(trace, simulated.plan, budget_bytes=budget, _cpu_async=3)
                assert_bitwise(self, plain, step(runtime), what + " (asynchronous copies)")
                self.assertLessEqual(runtime.peak_bytes, budget, what + " (asynchronous copies)")
        return trace

    def test_gpt(self):
        self.check_model("gpt")

    def test_bert(self):
        self.check_model("bert")

    def test_resnet50(self):
        self.check_model("resnet50")

    def test_lstm(self):
        self.check_model("lstm")

    def test_gru(self):
        self.check_model("gru")

    def test_vit_with_dropout(self):
        self.check_model("vit")


class EdgeCases:
    """Small models that write storages in place in awkward ways."""

    class TwoVersions(torch.nn.Module):
        # One storage read at two versions by one recipe: the old one it
        # rebuilds (h), the new one resident (relu_'s output).
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(8, 8)
            self.l2 = torch.nn.Linear(8, 4)

        def forward(self, x):
            h = self.l1(x)
            a = h + 1
            torch.nn.functional.relu(h, inplace=True)
            return self.l2((a + h).sin())

    class AlphaDropout(torch.nn.Module):
        # Its noise buffer is read at one version and saved at the next.
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(8, 16)
            self.l2 = torch.nn.Linear(16, 4)

        def forward(self, x):
            return self.l2(torch.nn.functional.alpha_dropout(torch.selu(self.l1(x)), 0.2, True))

    class InPlaceOnAView(torch.nn.Module):
        # Backward runs CopySlices: an in-place write into a storage made in
        # backward, which is not gradient accumulation.
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(8, 16)
            self.b = torch.nn.Linear(16, 4)

        def forward(self, x):
            h = self.a(x)
            h2 = h * 1.5
            h2[:, :8].add_(h[:, 8:])
            return self.b(torch.sin(h2))

    class SliceAssignedRNN(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.cell = torch.nn.RNNCell(8, 16)
            self.out = torch.nn.Linear(16, 5)

        def forward(self, x):
            batch, steps, _ = x.shape
            out = x.new_zeros(batch, steps, 16)
            h = x.new_zeros(batch, 16)
            for t in range(steps):
                h = self.cell(x[:, t], h)
                out[:, t] = h
            return self.out(out)


class RuntimeEdgeCasesTest(unittest.TestCase):
    def check(self, model, x):
        from slackswap.v1 import simulation_pb2
        from slackswap_client import Client, Runtime, profile
        torch.manual_seed(0)
        loss_fn = lambda out: out.pow(2).sum()  # noqa: E731
        step = Step.__new__(Step)
        step.model, step.x, step.loss_fn = model, x, loss_fn
        step.state = copy.deepcopy(model.state_dict())
        trace = profile(model, (x,), loss_fn)
        plain = step()
        uniform = uniform_copy(trace)
        rng = random.Random(11)
        with Client(runtime_support.SERVER, deadline=60) as client:
            for kind in ("swap", "recompute", "random", "random", "random"):
                plan = decisions_plan(trace, kind, rng)
                simulated = client.simulate(uniform, plan, fast_link(), budget_bytes=1 << 50,
                                            timeline=True)
                self.assertEqual(simulated.metrics.outcome,
                                 simulation_pb2.SIMULATION_OUTCOME_COMPLETED)
                for delay in (0, 3):
                    runtime = Runtime(trace, simulated.plan, budget_bytes=1 << 50,
                                      _cpu_async=delay)
                    what = f"{type(model).__name__} {kind} async={delay}"
                    assert_bitwise(self, plain, step(runtime), what)
                    if delay == 0:
                        expected = [("op" if e.kind == simulation_pb2.TIMELINE_EVENT_KIND_OP
                                     else "rebuild", e.index, e.resident_bytes)
                                    for e in simulated.timeline.events
                                    if e.kind in (simulation_pb2.TIMELINE_EVENT_KIND_OP,
                                                  simulation_pb2.TIMELINE_EVENT_KIND_REBUILD)]
                        self.assertEqual(runtime.ledger, expected, what)
                        self.assertEqual(runtime.peak_bytes,
                                         simulated.metrics.peak_resident_bytes, what)

    def test_a_recipe_reads_a_storage_at_two_versions(self):
        self.check(EdgeCases.TwoVersions(), torch.randn(4, 8))

    def test_alpha_dropout(self):
        self.check(EdgeCases.AlphaDropout(), torch.randn(4, 8))

    def test_an_in_place_op_on_a_view(self):
        self.check(EdgeCases.InPlaceOnAView(), torch.randn(4, 8))

    def test_slice_assignment_in_a_loop(self):
        self.check(EdgeCases.SliceAssignedRNN(), torch.randn(2, 5, 8))


class TrainingExampleTest(unittest.TestCase):
    def test_the_training_example_runs_and_matches_the_plain_loop(self):
        # examples/train_gpt.py: profile, plan, and five Adam steps under the
        # plan, bitwise equal to the loop without it, within the budget.
        script = os.path.join(runtime_support.ARGS.repo, "client", "python", "examples",
                              "train_gpt.py")
        done = subprocess.run(["/usr/bin/python3", script, "--server", runtime_support.SERVER],
                              capture_output=True, text=True, timeout=300)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        self.assertIn("bitwise equal to the plain loop: True", done.stdout)
        self.assertRegex(done.stdout, r"'swap': \d+|'recompute': \d+")


class MeasurementScriptTest(unittest.TestCase):
    def test_the_cuda_measurement_script_runs_on_cpu(self):
        # The script that fills docs/measurements.md on a CUDA machine, with a
        # tiny model on CPU: it must run through and write its table.
        import tempfile
        script = os.path.join(runtime_support.ARGS.repo, "client", "python", "examples",
                              "measure_runtime.py")
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "measurements.md")
            done = subprocess.run(["/usr/bin/python3", script, "--server-bin",
                                   runtime_support.ARGS.server, "--cpu-smoke", "--out", out],
                                  capture_output=True, text=True, timeout=300)
            self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
            with open(out) as f:
                text = f.read()
        rows = [line for line in text.splitlines() if re.match(r"^\| \d+% \| \d", line)]
        self.assertEqual(len(rows), 2, text)


if __name__ == "__main__":
    runtime_support.main()
