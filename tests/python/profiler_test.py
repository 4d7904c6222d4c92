"""Tests of the PyTorch profiler and Python client (client/python), on CPU.

Usage: profiler_test.py --server BIN --cli BIN --repo ROOT
"""
import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import torch

ARGS = None


def setup_paths(repo):
    sys.path.insert(0, os.path.join(repo, "client", "python"))
    sys.path.insert(0, os.path.join(repo, "client", "python", "examples"))
    os.environ["SLACKSWAP_PROTO_DIR"] = os.path.join(repo, "proto")


B, S, H, A, VOCAB = 2, 16, 32, 4, 64


def profiled_gpt(layers=2, dtype=torch.float32, timing="modelled", offload=None):
    import models
    from slackswap_client import profile
    torch.manual_seed(0)
    model = models.gpt(layers, H, A, S, VOCAB).to(dtype)
    tokens = torch.randint(0, VOCAB, (B, S))
    return profile(model, (tokens,), models.language_model_loss(tokens), timing=timing,
                   hardware="a100", offload=offload), model, tokens


def bytes_per_block(trace):
    out = collections.Counter()
    for t in trace.tensors:
        out[trace.operators[t.producer_op].block_index] += t.size_bytes
    return out


class ProfilerTest(unittest.TestCase):
    def test_one_tensor_is_the_models_one_argument(self):
        # profile(model, x, loss_fn) is profile(model, (x,), loss_fn); anything
        # but a tuple, a list or a tensor is refused naming `inputs`.
        from slackswap_client import profile
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
        x = torch.randn(4, 8)
        loss_fn = lambda out: out.sum()  # noqa: E731
        a = profile(model, x, loss_fn)
        b = profile(model, (x,), loss_fn)
        self.assertEqual([op.name for op in a.operators], [op.name for op in b.operators])
        self.assertEqual(len(a.tensors), len(b.tensors))
        with self.assertRaisesRegex(TypeError, "^inputs: "):
            profile(model, {"x": x}, loss_fn)

    def test_trace_is_valid_for_the_planner(self):
        trace, _, _ = profiled_gpt()
        with tempfile.NamedTemporaryFile(suffix=".pb") as f:
            f.write(trace.SerializeToString())
            f.flush()
            out = subprocess.run([ARGS.cli, "simulate", "--trace", f.name, "--policy", "all-swap",
                                  "--budget", "unlimited"], capture_output=True, text=True,
                                 timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("outcome      completed", out.stdout)

    def test_saved_bytes_equal_what_pytorch_saves(self):
        trace, model, tokens = profiled_gpt()
        # Independently: every non-parameter storage autograd saves and later
        # unpacks, counted once.
        import models
        params = {p.storage().data_ptr() for p in model.parameters()}
        saved, used = {}, set()

        def pack(t):
            key = t.storage().data_ptr()
            if key not in params:
                saved[key] = t.storage().nbytes()
            return (key, t)

        def unpack(handle):
            used.add(handle[0])
            return handle[1]

        model.zero_grad()
        torch.manual_seed(0)
        with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
            models.language_model_loss(tokens)(model(tokens)).backward()
        expected = sum(n for key, n in saved.items() if key in used)
        self.assertEqual(sum(t.size_bytes for t in trace.tensors), expected)

    def test_every_use_is_after_the_producer_and_some_are_backward(self):
        from slackswap_client import stubs
        stubs.load()
        from slackswap.v1 import trace_pb2
        trace, _, _ = profiled_gpt()
        for t in trace.tensors:
            self.assertTrue(all(u > t.producer_op for u in t.use_ops), t.name)
            self.assertEqual(trace.operators[t.producer_op].phase, trace_pb2.PHASE_FORWARD)
            backward = [u for u in t.use_ops
                        if trace.operators[u].phase == trace_pb2.PHASE_BACKWARD]
            self.assertTrue(backward, t.name)

    def test_two_layers_give_two_blocks_of_the_same_structure(self):
        trace, _, _ = profiled_gpt(layers=2)
        readers = {u for t in trace.tensors for u in t.use_ops}
        ops = collections.defaultdict(list)
        for i, op in enumerate(trace.operators):
            # Backward ops that read no saved tensor (gradient sums, bias
            # reductions) sit between blocks; compare the ones that read.
            if op.phase == 1 or i in readers:
                ops[(op.block_index, op.phase)].append((op.name, op.kind))
        # The blocks are the repeated layers: layer0 (1) and layer1 (2);
        # the embedding and the head are outside them (0).
        self.assertEqual(ops[(1, 1)], ops[(2, 1)])
        self.assertEqual(ops[(1, 2)], ops[(2, 2)])
        self.assertGreater(len(ops[(1, 1)]), 10)
        self.assertGreater(len(ops[(1, 2)]), 10)
        per_block = bytes_per_block(trace)
        self.assertEqual(per_block[1], per_block[2])
        self.assertEqual(sorted(b for b in per_block if per_block[b]), [0, 1, 2])

    def test_layer_saved_bytes_match_the_analytic_count(self):
        # Per layer of models.Block with plain attention and dropout, element
        # size e, dropout-mask element size m, LayerNorm-statistic size l:
        #   (16e + 2m) s b h  +  (2e + m) a s^2 b  +  2 * 2 l s b  +  s^2
        # (activations, two hidden-size dropout masks; softmax output, its mask
        # and the dropped probabilities; mean and rstd of two LayerNorms; the
        # causal mask). With e = 2, m = 1 and no statistics this is SPEC's
        # 34 sbh + 5 as^2 b. PyTorch 1.13 on CPU keeps dropout masks and
        # LayerNorm statistics in the activation dtype (m = l = e); the sizes
        # are read from PyTorch itself.
        for dtype in (torch.float32, torch.bfloat16):
            x = torch.ones(4, dtype=dtype, requires_grad=True)
            saved = []
            with torch.autograd.graph.saved_tensors_hooks(
                    lambda t: saved.append(t.element_size()) or t, lambda t: t):
                torch.nn.functional.dropout(x, 0.5, True)
            m = max(saved)
            e = torch.tensor([], dtype=dtype).element_size()
            l = torch.native_layer_norm(torch.ones(2, 4, dtype=dtype), [4], None, None,
                                        1e-5)[1].element_size()
            expected = ((16 * e + 2 * m) * S * B * H + (2 * e + m) * A * S * S * B
                        + 4 * l * S * B + S * S)
            trace, _, _ = profiled_gpt(dtype=dtype)
            per_block = bytes_per_block(trace)
            self.assertEqual(per_block[1], expected, dtype)
            self.assertEqual(per_block[2], expected, dtype)

    def test_modelled_times_follow_the_roofline_and_measured_ones_are_real(self):
        from slackswap_client import HARDWARE_PRESETS
        trace, _, _ = profiled_gpt()
        rates = HARDWARE_PRESETS["a100"]
        for op in trace.operators[1:]:
            seconds = max(op.flops / rates["matmul"], op.memory_traffic_bytes / rates["hbm"])
            self.assertAlmostEqual(op.duration_ns, seconds * 1e9, delta=1.0)
        measured, _, _ = profiled_gpt(timing="measured")
        self.assertGreater(sum(op.duration_ns for op in measured.operators), 0)

    def test_recompute_costs_and_inputs_come_from_the_graph(self):
        trace, _, _ = profiled_gpt()
        recomputable = [t for t in trace.tensors if not t.recompute_forbidden]
        self.assertGreater(len(recomputable), len(trace.tensors) // 2)
        for t in recomputable:
            self.assertGreater(t.recompute_duration_ns, 0)
            self.assertTrue(all(0 <= i < len(trace.tensors) for i in t.recompute_inputs))
        # The token ids exist before the step: they cannot be rebuilt.
        inputs = [t for t in trace.tensors if t.producer_op == 0]
        self.assertTrue(inputs and all(t.recompute_forbidden for t in inputs))

    def test_vgg16_when_torchvision_is_there(self):
        import models
        from slackswap_client import profile
        model = models.vgg16()
        if model is None:
            self.skipTest("python3-torchvision is not installed")
        images = torch.randn(1, 3, 32, 32)
        trace = profile(model, (images,), lambda out: out.sum())
        self.assertGreater(len(trace.tensors), 13)


class RecipeTest(unittest.TestCase):
    """Producers and recompute recipes where storages are written in place."""

    def test_an_in_place_add_is_the_producer_and_its_inputs_the_recipe(self):
        from torch import nn
        from slackswap_client import profile

        class Residual(nn.Module):
            def __init__(self):
                super().__init__()
                self.a = nn.Linear(8, 8)
                self.b = nn.Linear(8, 8)

            def forward(self, x):
                y = self.a(x)
                y += self.b(x)  # writes a's output in place
                return y * y    # saves y, after the add

        torch.manual_seed(0)
        trace = profile(Residual(), (torch.randn(4, 8),), lambda out: out.sum())
        names = [op.name for op in trace.operators]
        y = [t for t in trace.tensors if names[t.producer_op] == "add"]
        self.assertEqual(len(y), 1, [names[t.producer_op] for t in trace.tensors])
        y = y[0]
        self.assertFalse(y.recompute_forbidden)
        # Rebuilding y reruns both matmuls and the add, from the saved input.
        forward = [i for i, op in enumerate(trace.operators) if op.phase == 1]
        recipe = [i for i in forward if names[i] in ("addmm", "add")]
        self.assertEqual(len(recipe), 3, names)
        self.assertEqual(y.recompute_duration_ns,
                         sum(trace.operators[i].duration_ns for i in recipe))
        inputs = [i for i, t in enumerate(trace.tensors) if t.producer_op == 0]
        self.assertEqual(list(y.recompute_inputs), inputs)

    def test_resnet50_in_place_relus_produce_their_outputs(self):
        import models
        from slackswap_client import profile
        model = models.resnet50()
        if model is None:
            self.skipTest("python3-torchvision is not installed")
        torch.manual_seed(0)
        trace = profile(model, (torch.randn(2, 3, 32, 32),), lambda out: out.sum())
        names = [op.name for op in trace.operators]
        total = sum(t.size_bytes for t in trace.tensors)
        by_relu = [t for t in trace.tensors if names[t.producer_op] == "relu"]
        # Every ReLU in ResNet-50 is in place: its output is the batch norm's.
        self.assertGreater(sum(t.size_bytes for t in by_relu), 0.3 * total)
        for t in by_relu:
            self.assertFalse(t.recompute_forbidden)
            # The recipe reruns what the ReLU overwrote: the batch norm, or
            # the residual add (itself in place) at a bottleneck's end.
            self.assertGreater(t.recompute_duration_ns, trace.operators[t.producer_op].duration_ns)
            self.assertIn(names[t.producer_op - 1], ("native_batch_norm", "add"))
        self.assertFalse({"empty", "empty_like"} & {names[t.producer_op] for t in trace.tensors})
        # The blocks are the 16 bottlenecks.
        self.assertEqual(max(op.block_index for op in trace.operators), 16)

    def test_dropout_masks_are_recomputable_from_their_random_state(self):
        trace, _, _ = profiled_gpt(layers=2)
        names = [op.name for op in trace.operators]
        masks = [t for t in trace.tensors
                 if names[t.producer_op] == "div" and "bernoulli" in names[t.producer_op - 2:
                                                                        t.producer_op]]
        # The embedding's dropout and three per layer.
        self.assertEqual(len(masks), 1 + 3 * 2, names)
        for t in masks:
            self.assertFalse(t.recompute_forbidden)

    def test_checkpointing_inside_the_step_is_refused(self):
        import torch.utils.checkpoint as cp
        from torch import nn
        from slackswap_client import ProfileError, profile

        class Checkpointed(nn.Module):
            def __init__(self, reentrant):
                super().__init__()
                self.inner = nn.Sequential(nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 8))
                self.reentrant = reentrant

            def forward(self, x):
                return cp.checkpoint(self.inner, x, use_reentrant=self.reentrant)

        x = torch.randn(4, 8, requires_grad=True)
        for reentrant in (True, False):
            with self.assertRaisesRegex(ProfileError, "torch.utils.checkpoint"):
                profile(Checkpointed(reentrant), (x,), lambda out: out.sum())
            # Outside the profiler, checkpointing works again.
            Checkpointed(reentrant)(x).sum().backward()

    def test_blocks_can_be_named(self):
        import models
        from slackswap_client import profile
        torch.manual_seed(0)
        model = models.gpt(2, H, A, S, VOCAB)
        tokens = torch.randint(0, VOCAB, (B, S))
        trace = profile(model, (tokens,), models.language_model_loss(tokens),
                        blocks=[model.embedding, model.head])
        per_block = bytes_per_block(trace)
        self.assertEqual(sorted(b for b in per_block if per_block[b]), [0, 1, 2])
        # The layers (block 0 now) hold most of the bytes.
        self.assertGreater(per_block[0], per_block[1] + per_block[2])


def param_bytes(*modules):
    return sum(p.numel() * p.element_size() for m in modules for p in m.parameters())


def transfers(trace):
    """(name, direction, size, after, before, gpu_bytes, release), None for unset."""
    def field(x, name):
        return getattr(x, name) if x.HasField(name) else None
    return [(x.name, x.direction, x.size_bytes, field(x, "after_op"), field(x, "before_op"),
             x.gpu_bytes, field(x, "release_op")) for x in trace.fixed_transfers]


class OffloadTest(unittest.TestCase):
    """offload=: the generator's fixed transfers (simulator/offload_traffic.cc)
    from the model's own parameters."""

    def profiled(self, offload, layers=2, tie=False, units=None):
        """A GPT profiled with `offload`; units(model): its offload_units."""
        import models
        from slackswap_client import profile
        torch.manual_seed(0)
        model = models.gpt(layers, H, A, S, VOCAB)
        if tie:
            model.head.out.weight = model.embedding.tokens.weight
        tokens = torch.randint(0, VOCAB, (B, S))
        torch.manual_seed(1)
        trace = profile(model, (tokens,), models.language_model_loss(tokens), offload=offload,
                        offload_units=units(model) if units else None)
        return trace, model

    def test_each_unit_moves_its_bytes_between_its_own_ops_as_the_generator_does(self):
        from slackswap_client import stubs
        stubs.load()
        from slackswap.v1 import trace_pb2
        d2h, h2d = trace_pb2.DIRECTION_D2H, trace_pb2.DIRECTION_H2D
        for layers in (2, 3):
            n = layers
            fsdp, model = self.profiled("fsdp-cpu", layers)
            ops = fsdp.operators
            forward = [i for i, op in enumerate(ops) if op.phase == trace_pb2.PHASE_FORWARD]
            backward = [i for i, op in enumerate(ops) if op.phase == trace_pb2.PHASE_BACKWARD]
            last = len(ops) - 1
            # Each unit's ops, read from its FSDP fetches: forward from
            # before_op to release_op, backward likewise.
            by_name = {x.name: x for x in fsdp.fixed_transfers}
            name = [f"layer{u}" for u in range(n)]
            fwd = [(by_name[v + ".params.fwd"].before_op, by_name[v + ".params.fwd"].release_op)
                   for v in name]
            bwd = [(by_name[v + ".params.bwd"].before_op, by_name[v + ".params.bwd"].release_op)
                   for v in name]
            # They split forward in order and backward in reverse, the first
            # unit taking the embedding (from op 0; the last ops of
            # backward), the last the head and the loss.
            self.assertEqual([f for r in fwd for f in r],
                             [0] + [i for r in fwd[:-1] for i in (r[1], r[1] + 1)] +
                             [forward[-1]])
            self.assertEqual([b for r in reversed(bwd) for b in r],
                             [backward[0]] + [i for r in reversed(bwd[1:])
                                              for i in (r[1], r[1] + 1)] + [last])
            # Forward ops are in their layer's unit; so are the LayerNorms'
            # backward ops (a layer's first reads the previous layer's output).
            for u in range(n):
                self.assertTrue(all(fwd[u][0] <= i <= fwd[u][1] for i in forward
                                    if ops[i].block_index == u + 1))
            norms = [i for i in backward if ops[i].name == "native_layer_norm_backward"]
            self.assertEqual(len(norms), 2 * n + 1)  # the head's, then two per layer
            for k, i in enumerate(norms):
                u = n - 1 - max(0, k - 1) // 2
                self.assertTrue(bwd[u][0] <= i <= bwd[u][1], (u, k, bwd))
            size = [param_bytes(getattr(model, v)) for v in name]
            size[0] += param_bytes(model.embedding)
            size[-1] += param_bytes(model.head)
            grads = [(name[u] + ".grad", d2h, size[u], bwd[u][1], None, size[u], None)
                     for u in reversed(range(n))]
            expected = {
                "zero": grads + [(name[u] + ".params", h2d, size[u], last, None, 0, None)
                                 for u in range(n)],
                "zero-dpu": [(name[u] + ".params", h2d, size[u], None, fwd[u][0], 0, None)
                             for u in range(n)] + grads,
                "fsdp-cpu": [(name[u] + ".params.fwd", h2d, size[u],
                              fwd[u - 1][0] if u else None, fwd[u][0], size[u], fwd[u][1])
                             for u in range(n)] +
                            [(name[u] + ".params.bwd", h2d, size[u],
                              bwd[u + 1][0] if u + 1 < n else forward[-1], bwd[u][0], size[u],
                              bwd[u][1]) for u in reversed(range(n))] + grads}
            for mode, want in expected.items():
                trace = fsdp if mode == "fsdp-cpu" else self.profiled(mode, layers)[0]
                self.assertEqual(transfers(trace), want, (layers, mode))
                # Per direction, the model's parameter bytes once; FSDP's
                # H2D twice.
                moved = collections.Counter()
                for x in trace.fixed_transfers:
                    moved[x.direction] += x.size_bytes
                self.assertEqual(moved[d2h], param_bytes(model))
                self.assertEqual(moved[h2d], (2 if mode == "fsdp-cpu" else 1) * param_bytes(model))

    def test_without_offload_the_trace_is_the_same(self):
        plain, _ = self.profiled(None)
        self.assertFalse(plain.fixed_transfers)
        for offload in ("none", "fsdp-cpu"):
            trace, _ = self.profiled(offload)
            del trace.fixed_transfers[:]
            self.assertEqual(trace.SerializeToString(), plain.SerializeToString(), offload)
        unnamed, _ = self.profiled(None)
        self.assertEqual(unnamed.SerializeToString(), plain.SerializeToString())

    def test_tied_weights_count_once_in_the_first_unit_that_runs(self):
        trace, model = self.profiled("zero", tie=True)
        size = {x.name: x.size_bytes for x in trace.fixed_transfers}
        self.assertEqual(size["layer0.grad"],
                         param_bytes(model.layer0) + param_bytes(model.embedding))
        self.assertEqual(size["layer1.grad"],
                         param_bytes(model.layer1) + param_bytes(model.head.ln))
        self.assertEqual(sum(size.values()), 2 * param_bytes(model))  # parameters() dedupes

    def test_named_and_nested_units(self):
        from slackswap_client import profile
        from torch import nn
        torch.manual_seed(0)
        model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                              nn.Linear(16, 4))
        trace = profile(model, torch.randn(4, 8), lambda out: out.sum(), offload="fsdp-cpu",
                        offload_units=[model[0], model[2], model[4]])
        names = [op.name for op in trace.operators]
        matmuls = [i for i, op in enumerate(trace.operators) if names[i] == "addmm"]
        last_forward = max(i for i, op in enumerate(trace.operators) if op.phase == 1)
        fetches = [(x.name, x.size_bytes, x.before_op, x.release_op)
                   for x in trace.fixed_transfers if x.name.endswith(".fwd")]
        # A ReLU between units joins the next one; the loss the last.
        self.assertEqual(fetches, [
            ("0.params.fwd", param_bytes(model[0]), 0, matmuls[0]),
            ("2.params.fwd", param_bytes(model[2]), matmuls[0] + 1, matmuls[1]),
            ("4.params.fwd", param_bytes(model[4]), matmuls[1] + 1, last_forward)])
        # FSDP's root unit around the layers: its own parameters are the
        # embedding and the head; it is fetched first and held to the loss.
        trace, model = self.profiled("fsdp-cpu",
                                     units=lambda m: [m.layer1, m, m.layer0])
        last_forward = max(i for i, op in enumerate(trace.operators) if op.phase == 1)
        fetches = [(x.name, x.size_bytes, x.before_op) for x in trace.fixed_transfers
                   if x.name.endswith(".fwd")]
        self.assertEqual(fetches, [
            ("unit1.params.fwd", param_bytes(model.embedding, model.head), 0),
            ("layer0.params.fwd", param_bytes(model.layer0), fetches[1][2]),
            ("layer1.params.fwd", param_bytes(model.layer1), fetches[2][2])])
        self.assertEqual(trace.fixed_transfers[0].release_op, last_forward)
        self.assertEqual([trace.operators[x[2]].block_index for x in fetches[1:]], [1, 2])

    def test_bad_offload_arguments_are_refused_naming_them(self):
        from slackswap_client import ProfileError
        with self.assertRaisesRegex(ValueError, "^offload: unknown mode 'zero3'"):
            self.profiled("zero3")
        with self.assertRaisesRegex(ValueError, "^offload_units: given without"):
            self.profiled(None, units=lambda m: [m.layer0])
        import models
        idle = models.Block(H, A)
        with self.assertRaisesRegex(ProfileError, r"^offload_units\[1\] \(Block\) ran no "
                                                  "forward"):
            self.profiled("zero", units=lambda m: [m.layer0, idle])


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.proc = subprocess.Popen([ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "",
                             "--call_log", "none"],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        line = cls.proc.stdout.readline()
        match = re.match(r"listening on port (\d+)", line)
        if not match:
            cls.proc.kill()
            raise RuntimeError("server did not start: " + line)
        cls.address = f"127.0.0.1:{match.group(1)}"

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(timeout=30)
        cls.proc.stdout.close()

    def test_generated_offload_traffic_from_the_client(self):
        from slackswap_client import Client
        from slackswap.v1 import planning_pb2
        with Client(self.address, deadline=60) as client:
            plain = client.generate("gpt2-xl", layers=2)
            self.assertEqual(len(plain.trace.fixed_transfers), 0)
            fsdp = client.generate("gpt2-xl", layers=2, offload="fsdp-cpu")
            # Per layer a forward and a backward fetch and a gradient copy.
            self.assertEqual(len(fsdp.trace.fixed_transfers), 6)
            self.assertEqual([o.name for o in fsdp.trace.operators],
                             [o.name for o in plain.trace.operators])
            # Two layers: the parameter copies (the first with the embedding)
            # set the floor above half the peak.
            report = client.plan(fsdp.trace, hardware=fsdp.hardware,
                                 budget_fraction=0.8).report
            self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, report.reason)
            self.assertGreater(report.metrics.fixed_transfer_wait_ns, 0)
            self.assertLessEqual(report.lower_bound_ns, report.metrics.iteration_ns)
            with self.assertRaisesRegex(ValueError, "offload"):
                client.generate("gpt2-xl", offload="zero3")

    def test_profile_plan_and_replay_through_the_server(self):
        from slackswap.v1 import planning_pb2
        from slackswap_client import Client
        trace, _, _ = profiled_gpt(layers=3)
        with Client(self.address, deadline=30) as client:
            self.assertTrue(client.healthy())
            response = client.plan(trace, hardware="A100", budget_fraction=0.6)
            self.assertGreater(response.planning_time_ns, 0)
            report = response.report
            self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, report.reason)
            self.assertLessEqual(report.metrics.peak_resident_bytes, report.metrics.budget_bytes)
            replay = client.simulate(trace, report.plan, hardware="a100", budget_fraction=0.6)
            self.assertEqual(replay.metrics, report.metrics)

    def test_offload_traffic_is_planned_and_replayed(self):
        from slackswap_client import Client, hardware_proto, stubs
        stubs.load()
        from slackswap.v1 import planning_pb2, simulation_pb2, trace_pb2
        a100 = hardware_proto("a100")
        bandwidth = {trace_pb2.DIRECTION_D2H: a100.d2h_bytes_per_second,
                     trace_pb2.DIRECTION_H2D: a100.h2d_bytes_per_second}
        with Client(self.address, deadline=60) as client:
            for mode in ("zero", "zero-dpu", "fsdp-cpu"):
                trace, _, _ = profiled_gpt(layers=3, offload=mode)
                report = client.plan(trace, hardware="a100", budget_fraction=0.6).report
                self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED,
                                 (mode, report.reason))
                replay = client.simulate(trace, report.plan, hardware="a100",
                                         budget_fraction=0.6, timeline=True)
                self.assertEqual(replay.metrics, report.metrics, mode)
                # Every mode has a copy the first op or the iteration's end
                # waits for, with nothing before it to hide behind.
                self.assertGreater(replay.metrics.fixed_transfer_wait_ns, 0, mode)
                events = [e for e in replay.timeline.events
                          if e.kind == simulation_pb2.TIMELINE_EVENT_KIND_FIXED_TRANSFER]
                self.assertEqual(sorted(e.index for e in events),
                                 list(range(len(trace.fixed_transfers))), mode)
                for e in events:
                    x = trace.fixed_transfers[e.index]
                    self.assertGreaterEqual(e.end_ns - e.start_ns,
                                            x.size_bytes * 1e9 / bandwidth[x.direction] - 1)

    def test_client_physics_and_node_plans(self):
        from slackswap.v1 import planning_pb2, simulation_pb2
        from slackswap_client import Client
        from slackswap_client.hardware import hardware_proto
        trace, _, _ = profiled_gpt(layers=3)
        physics = simulation_pb2.Physics(allocator=simulation_pb2.ALLOCATOR_MODEL_EXPANDABLE,
                                         budget_reserved=True)
        with Client(self.address, deadline=60) as client:
            # This small model's activations fit in one 2 MiB page of the
            # small pool: within 4 MiB reserved, and never within 70% of
            # their resident peak.
            report = client.plan(trace, budget_bytes=4 << 20, physics=physics).report
            self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, report.reason)
            self.assertLessEqual(report.metrics.peak_reserved_bytes, 4 << 20)
            self.assertGreaterEqual(report.metrics.peak_reserved_bytes, 2 << 20)
            replay = client.simulate(trace, report.plan, budget_bytes=4 << 20, physics=physics)
            self.assertEqual(replay.metrics, report.metrics)
            # Not proven: the resident floor is below 70%; the planner finds
            # no plan whose reserved bytes fit.
            tight = client.plan(trace, budget_fraction=0.7, physics=physics).report
            self.assertEqual(tight.outcome, planning_pb2.PLAN_OUTCOME_NO_PLAN_FOUND)
            self.assertLess(tight.proven_floor_bytes, tight.metrics.budget_bytes)
            self.assertIn("reserved", tight.reason)
            node = hardware_proto("a100")
            node.uplink_d2h_bytes_per_second = node.d2h_bytes_per_second
            node.uplink_h2d_bytes_per_second = node.h2d_bytes_per_second
            answer = client.plan_node([("small", trace, 0.6, 1), ("large", trace, 0.8, 3)],
                                      hardware=node)
            self.assertEqual([j.name for j in answer.jobs], ["small", "large"])
            for job in answer.jobs:
                self.assertEqual(job.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, job.reason)
                self.assertGreaterEqual(job.slowdown, 0.99)

    def test_client_errors_carry_field_violations(self):
        import grpc
        from slackswap_client import Client, PlanningError
        trace, _, _ = profiled_gpt()
        trace.tensors[3].use_ops[0] = 999999
        with Client(self.address, deadline=30) as client:
            with self.assertRaises(PlanningError) as error:
                client.plan(trace, budget_fraction=0.5)
        self.assertEqual(error.exception.code, grpc.StatusCode.INVALID_ARGUMENT)
        fields = [field for field, _ in error.exception.violations]
        self.assertIn("trace.tensors[3].use_ops[0]", fields)
        self.assertIn("trace.tensors[3].use_ops[0]", str(error.exception))

    def test_client_policies_compare_and_frontier(self):
        from slackswap.v1 import planning_pb2
        from slackswap_client import Client
        trace, _, _ = profiled_gpt()
        with Client(self.address, deadline=60) as client:
            checkpointing = client.plan(trace, budget_fraction=0.6, policy="checkpointing")
            self.assertEqual(checkpointing.report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED)
            with self.assertRaisesRegex(ValueError, "unknown policy 'magic'.*slackswap"):
                client.plan(trace, budget_fraction=0.6, policy="magic")
            comparison = client.compare(trace, budget_fractions=[0.5, 0.7],
                                        policies=["slackswap", "POLICY_VDNN"])
            self.assertEqual(len(comparison.entries), 4)
            self.assertEqual({e.policy for e in comparison.entries},
                             {planning_pb2.POLICY_SLACKSWAP, planning_pb2.POLICY_VDNN})
            frontier = client.frontier(trace, budget_fractions=[0.4, 0.8],
                                       target_throughput_ratio=0.9)
            # The two asked for, and the bisection's points towards the target.
            self.assertGreaterEqual(len(frontier.points), 2)
            self.assertEqual(sorted({round(p.budget_fraction_of_peak, 6)
                                     for p in frontier.points} & {0.4, 0.8}), [0.4, 0.8])
            self.assertGreater(frontier.all_keep_peak_bytes, 0)

    def test_healthy_is_false_when_no_server_answers(self):
        import socket
        from slackswap_client import Client
        with socket.socket() as s:  # a port nothing listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        with Client(f"127.0.0.1:{port}", deadline=2) as client:
            self.assertFalse(client.healthy())
        with Client(self.address, deadline=10) as client:
            self.assertTrue(client.healthy())
            self.assertFalse(client.healthy("no.such.Service"))

    def test_the_package_installs_with_pip_and_carries_its_stubs(self):
        # Offline, as the README says: a venv over the system's packages,
        # pip without dependencies or build isolation. The installed client
        # then runs from anywhere, with no proto folder and an empty cache:
        # its stubs were generated at install.
        with tempfile.TemporaryDirectory() as tmp:
            venv = os.path.join(tmp, "venv")
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv],
                           check=True, capture_output=True, timeout=120)
            source = os.path.join(tmp, "src")  # a copy: the checkout stays clean
            shutil.copytree(os.path.join(ARGS.repo, "client", "python"), source,
                            ignore=shutil.ignore_patterns("build", "*.egg-info", "_generated",
                                                          "__pycache__"))
            env = dict(os.environ,
                       SLACKSWAP_PROTO_DIR=os.path.abspath(os.path.join(ARGS.repo, "proto")))
            out = subprocess.run([os.path.join(venv, "bin", "pip"), "install", "--no-deps",
                                  "--no-build-isolation", "--no-index", source],
                                 capture_output=True, text=True, timeout=300, env=env)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            script = (
                "import sys, torch\n"
                "from slackswap_client import Client, profile, stubs\n"
                "assert stubs.packaged(), 'no packaged stubs'\n"
                "model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(),\n"
                "                            torch.nn.Linear(8, 8))\n"
                "trace = profile(model, (torch.randn(4, 8),), lambda out: out.sum())\n"
                "with Client(sys.argv[1], deadline=30) as client:\n"
                "    response = client.plan(trace, budget_fraction=0.8)\n"
                "print(response.report.outcome, stubs.__file__)\n")
            clean = {k: v for k, v in os.environ.items() if k != "SLACKSWAP_PROTO_DIR"}
            clean["XDG_CACHE_HOME"] = os.path.join(tmp, "empty-cache")
            out = subprocess.run([os.path.join(venv, "bin", "python"), "-c", script,
                                  self.address], capture_output=True, text=True, timeout=120,
                                 cwd=tmp, env=clean)
            self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
            self.assertRegex(out.stdout, r"^[12] .*venv.*site-packages")  # planned or not
            self.assertFalse(os.path.exists(clean["XDG_CACHE_HOME"]))

    def test_hardware_names_are_case_insensitive(self):
        from slackswap_client import hardware_proto
        self.assertEqual(hardware_proto("H100"), hardware_proto("h100"))
        self.assertEqual(hardware_proto("H100").name, "h100")
        with self.assertRaisesRegex(ValueError, "unknown hardware preset 'tpu'.*a100"):
            hardware_proto("tpu")

    def test_hardware_presets_match_the_server(self):
        from slackswap.v1 import service_pb2, service_pb2_grpc
        from slackswap_client import HARDWARE_PRESETS, hardware_proto
        import grpc
        with grpc.insecure_channel(self.address) as channel:
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            for name in HARDWARE_PRESETS:
                response = stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                    workload_preset="llama-7b", hardware_preset=name, layers=1), timeout=30)
                self.assertEqual(response.hardware, hardware_proto(name), name)


def main():
    global ARGS
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--repo", required=True)
    ARGS, rest = parser.parse_known_args()
    setup_paths(ARGS.repo)
    program = unittest.main(argv=[sys.argv[0], *rest], exit=False, verbosity=2)
    failed = len(program.result.failures) + len(program.result.errors)
    skipped = len(program.result.skipped)
    print(f"{program.result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
    sys.exit(0 if program.result.wasSuccessful() else 1)


if __name__ == "__main__":
    main()
