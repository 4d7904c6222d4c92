"""One request must never take the real server down: end-to-end checks of the
per-call limits, the generator's bounds, the metrics endpoint under idle
connections and on IPv6, quiet logs for bad UTF-8, and a drain that stops
planning.

Run by ctest: hardening_e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import argparse
import os
import re
import signal
import socket
import sys
import time
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2e_test  # noqa: E402  (Server, stub generation)

# Memory figures mean nothing under AddressSanitizer (shadow memory,
# quarantine): the sanitizer run sets this and skips them.
SANITIZED = os.environ.get("SLACKSWAP_SANITIZED") == "1"


def peak_rss_bytes(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmHWM")


def shaped_trace(n, shape):
    """A trace of 2n operators: 'operators' has a tensor per 16 forward ops,
    'tensors' one per forward op, 'relations' one per forward op with 13 uses
    and up to 6 recompute inputs each."""
    from slackswap.v1 import trace_pb2
    t = trace_pb2.Trace(name=shape)
    for i in range(n):
        t.operators.add(phase=trace_pb2.PHASE_FORWARD, kind=trace_pb2.OP_KIND_MATMUL,
                        duration_ns=1000)
    for i in range(n):
        t.operators.add(phase=trace_pb2.PHASE_BACKWARD, kind=trace_pb2.OP_KIND_MATMUL,
                        duration_ns=2000)
    step = 16 if shape == "operators" else 1
    for i in range(0, n, step):
        uses = {min(i + 1, n), 2 * n - 1 - i}
        if shape == "relations":
            uses |= {min(i + k, n - 1) for k in range(2, 8)}
            uses |= {2 * n - 1 - max(0, i - k) for k in range(1, 8)}
        tensor = t.tensors.add(size_bytes=1 << 20, producer_op=i,
                               use_ops=sorted(u for u in uses if u > i),
                               recompute_duration_ns=500 + i % 100)
        k = len(t.tensors) - 1
        if k > 0:
            inputs = {k - 1}
            if shape == "relations":
                inputs |= {max(0, k - d) for d in range(2, 7)}
            tensor.recompute_inputs.extend(sorted(inputs - {k}))
    return t


def a100():
    from slackswap.v1 import hardware_pb2
    return hardware_pb2.Hardware(name="a100", d2h_bytes_per_second=25_000_000_000,
                                 h2d_bytes_per_second=25_000_000_000,
                                 transfer_latency_ns=10_000)


def skewed_node():
    """The A100 with 64 GPUs behind one uplink as fast as one link."""
    hardware = a100()
    hardware.gpus_per_uplink = 64
    hardware.uplink_d2h_bytes_per_second = hardware.d2h_bytes_per_second
    hardware.uplink_h2d_bytes_per_second = hardware.h2d_bytes_per_second
    return hardware


class HardeningTest(unittest.TestCase):
    def stub_on(self, channel):
        from slackswap.v1 import service_pb2_grpc
        return service_pb2_grpc.PlannerServiceStub(channel)

    def stub(self, server):
        # Closed before the server stops (cleanups run last in, first out): an
        # open channel holds up the server's drain.
        channel = server.channel()
        self.addCleanup(channel.close)
        return self.stub_on(channel)

    def server(self, *flags):
        server = e2e_test.Server(*flags)
        self.addCleanup(server.stop)
        return server

    # --- Item 6: a per-call memory bound that holds. ---

    def request(self, kind, trace, fraction=0.3):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, simulation_pb2
        budget = plan_pb2.Budget(fraction_of_peak=fraction)
        if kind == "plan":
            return "Plan", service_pb2.PlanRequest(trace=trace, hardware=a100(), budget=budget)
        if kind in ("simulate", "simulate_skewed"):
            plan = plan_pb2.Plan(tensors=[plan_pb2.TensorPlan(decision=plan_pb2.DECISION_KEEP)
                                          for _ in trace.tensors])
            request = service_pb2.SimulateRequest(
                trace=trace, hardware=a100(), budget=plan_pb2.Budget(unlimited=True), plan=plan,
                include_timeline=True)
            if kind == "simulate_skewed":
                # 64 ranks skewed by 1 us, each with its timeline and allocator.
                request.hardware.CopyFrom(skewed_node())
                request.physics.CopyFrom(simulation_pb2.Physics(
                    rank_skew_ns=1000, allocator=simulation_pb2.ALLOCATOR_MODEL_CACHING))
            return "Simulate", request
        if kind == "plan_skewed_reserved":
            return "Plan", service_pb2.PlanRequest(
                trace=trace, hardware=skewed_node(), budget=plan_pb2.Budget(fraction_of_peak=0.5),
                physics=simulation_pb2.Physics(
                    rank_skew_ns=1000, allocator=simulation_pb2.ALLOCATOR_MODEL_CACHING,
                    budget_reserved=True))
        if kind == "node8":
            # Eight jobs of the trace on one node: all held at once.
            hardware = a100()
            hardware.uplink_d2h_bytes_per_second = hardware.d2h_bytes_per_second
            hardware.uplink_h2d_bytes_per_second = hardware.h2d_bytes_per_second
            return "PlanNode", service_pb2.PlanNodeRequest(
                hardware=hardware,
                jobs=[service_pb2.NodeJob(trace=trace, budget=plan_pb2.Budget(fraction_of_peak=0.6))
                      for _ in range(8)])
        return "Compare", service_pb2.CompareRequest(
            trace=trace, hardware=a100(), budgets=[budget],
            policies=[planning_pb2.POLICY_GENETIC_SEARCH], genetic_search_evaluations=100)

    def call(self, stub, kind, trace):
        method, request = self.request(kind, trace)
        return getattr(stub, method)(request, timeout=300)

    def refused_estimate(self, kind, shape, n, limit):
        """The estimate (MiB) a server with `limit` states when it refuses the
        call for a trace of n forward ops, and whether it is the whole call's
        ("about") or the lower bound read from the request's bytes before
        decoding it ("at least"). For a node, the estimate covers the jobs up to
        the one named; it is scaled to all eight."""
        import grpc
        probe = e2e_test.Server("--max_call_memory_bytes", str(limit))
        try:
            with probe.channel() as channel, self.assertRaises(grpc.RpcError) as refused:
                self.call(self.stub_on(channel), kind, shaped_trace(n, shape))
        finally:
            probe.stop()
        self.assertEqual(refused.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        message = refused.exception.details()
        m = re.match(r"(?:jobs\[(\d+)\]\.)?trace: .* needs (about|at least) (\d+) MiB", message)
        self.assertIsNotNone(m, message)
        jobs = int(m.group(1)) + 1 if m.group(1) is not None else 1
        scale = 8 / jobs if kind == "node8" else 1
        return float(m.group(3)) * scale, m.group(2) == "about"

    @unittest.skipIf(SANITIZED, "memory figures are meaningless under AddressSanitizer")
    def test_an_accepted_call_stays_within_the_per_call_memory_limit(self):
        """The server estimates a call's memory from its trace before planning.
        For each shape and kind of call, a trace just under the limit by that
        estimate must plan within the limit in fact (peak RSS of a fresh server
        process), and a trace over it is refused naming the trace. The kinds
        include 64 skewed ranks with timelines and the caching allocator, a
        reserved budget on them, and eight jobs of a node."""
        limit = 32 << 20
        for shape, kind in [("operators", "plan"), ("tensors", "plan"), ("relations", "plan"),
                            ("operators", "simulate"), ("tensors", "compare"),
                            ("tensors", "simulate_skewed"), ("tensors", "plan_skewed_reserved"),
                            ("tensors", "node8")]:
            with self.subTest(shape=shape, kind=kind):
                # Over the limit: refused before planning, naming the trace, and the
                # message says what the estimate was. A trace far over it is refused
                # from the request's bytes by a lower bound; one just under that
                # bound is refused by the whole call's estimate.
                probe_n = 150_000 // (8 if kind == "node8" else 1)
                estimate, whole = self.refused_estimate(kind, shape, probe_n, limit)
                if not whole:
                    probe_n = int(probe_n * 0.97 * (limit / (1 << 20)) / estimate)
                    estimate, whole = self.refused_estimate(kind, shape, probe_n, limit)
                    self.assertTrue(whole, "the whole call's estimate is at least the lower bound")
                # The estimate grows linearly with n: take 90% of the limit, and
                # measure it in a fresh process (the refused call raised the peak).
                n = int(probe_n * 0.9 * (limit / (1 << 20)) / estimate)
                server = e2e_test.Server("--max_call_memory_bytes", str(limit),
                                         "--planning_threads", "1")
                try:
                    with server.channel() as channel:
                        stub = self.stub_on(channel)
                        self.call(stub, kind, shaped_trace(100, shape))  # warm up the server
                        trace = shaped_trace(n, shape)
                        before = peak_rss_bytes(server.proc.pid)
                        self.call(stub, kind, trace)
                        used = peak_rss_bytes(server.proc.pid) - before
                finally:
                    server.stop()
                print(f"\n  {shape} {kind}: {n} forward ops, estimated "
                      f"{estimate * n / probe_n:.1f} MiB, peak {used / (1 << 20):.1f} MiB",
                      file=sys.stderr)
                self.assertLessEqual(used, limit, f"n={n}: {used >> 20} MiB")
                self.assertGreater(used, limit // 8, "the trace should use a real share")

    @unittest.skipIf(SANITIZED, "memory figures are meaningless under AddressSanitizer")
    def test_counts_are_refused_from_the_bytes_before_the_request_is_built(self):
        """Requests of up to 32 MiB whose repeated fields would build more than
        a gigabyte of messages are refused from their bytes: the peak grows by
        about the request's bytes (received, then flattened), not by the
        messages."""
        import grpc
        server = self.server("--max_message_bytes", str(64 << 20),
                             "--max_call_memory_bytes", str(32 << 20), "--planning_threads", "1")
        channel = server.channel()
        self.addCleanup(channel.close)
        self.stub_on(channel).GenerateTrace(self.generate_request(), timeout=60)  # warm up

        def raw(method, data):
            return channel.unary_unary(f"/slackswap.v1.PlannerService/{method}")(data, timeout=120)

        def length(n):
            out = b""
            while True:
                out += bytes([(n & 0x7F) | (0x80 if n >= 0x80 else 0)])
                n >>= 7
                if not n:
                    return out
        ops = b"\x12\x00" * 4_000_000  # a trace of 4M empty operators
        trace = b"\x12" + length(len(ops)) + ops  # NodeJob.trace
        cases = [
            ("PlanNode", b"\x12\x00" * 16_700_000, grpc.StatusCode.INVALID_ARGUMENT, "jobs: "),
            ("Compare", b"\x1a\x00" * 16_700_000, grpc.StatusCode.INVALID_ARGUMENT, "budgets: "),
            ("PlanNode", b"\x12\x02\x12\x00" * 8_400_000, grpc.StatusCode.INVALID_ARGUMENT,
             "jobs: "),
            ("PlanNode", b"\x12" + length(len(trace)) + trace,
             grpc.StatusCode.RESOURCE_EXHAUSTED, "jobs[0].trace: "),
        ]
        for method, data, code, field in cases:
            with self.subTest(method=method, field=field, size=len(data)):
                before = peak_rss_bytes(server.proc.pid)
                with self.assertRaises(grpc.RpcError) as refused:
                    raw(method, data)
                grown = peak_rss_bytes(server.proc.pid) - before
                self.assertEqual(refused.exception.code(), code, refused.exception.details())
                self.assertTrue(refused.exception.details().startswith(field),
                                refused.exception.details())
                print(f"\n  {method} of {len(data) >> 20} MiB: peak +{grown >> 20} MiB",
                      file=sys.stderr)
                self.assertLessEqual(grown, 2 * len(data) + (16 << 20), f"+{grown >> 20} MiB")

    def generate_request(self):
        from slackswap.v1 import service_pb2
        return service_pb2.GenerateTraceRequest(workload_preset="llama-7b",
                                                hardware_preset="a100", layers=2)

    @unittest.skipIf(SANITIZED, "memory figures are meaningless under AddressSanitizer")
    def test_concurrent_heavy_calls_stay_within_the_replica_bound(self):
        """16 calls at once, each of 64 skewed ranks with timelines and the
        caching allocator at 90% of the per-call limit: the process stays within
        the replica's bound of docs/service.md (requests admitted x message
        bytes + planning threads x (call memory + 2 x message bytes) + 64 MiB)."""
        import concurrent.futures
        limit, message, calls, threads = 32 << 20, 8 << 20, 16, 2
        probe_n = 2_000
        estimate, whole = self.refused_estimate("simulate_skewed", "tensors", probe_n, limit)
        self.assertTrue(whole)
        n = int(probe_n * 0.9 * (limit / (1 << 20)) / estimate)
        server = self.server("--max_call_memory_bytes", str(limit),
                             "--max_message_bytes", str(message),
                             "--max_concurrent_requests", str(calls),
                             "--planning_threads", str(threads))
        stub = self.stub(server)
        method, request = self.request("simulate_skewed", shaped_trace(n, "tensors"))
        with concurrent.futures.ThreadPoolExecutor(calls) as pool:
            for f in [pool.submit(getattr(stub, method), request, timeout=300)
                      for _ in range(calls)]:
                f.result()
        bound = calls * message + threads * (limit + 2 * message) + (64 << 20)
        peak = peak_rss_bytes(server.proc.pid)
        print(f"\n  {calls} calls of {n} forward ops on 64 skewed ranks: peak "
              f"{peak >> 20} MiB, bound {bound >> 20} MiB", file=sys.stderr)
        self.assertLessEqual(peak, bound)

    def test_the_work_a_call_asks_for_is_bounded(self):
        import grpc
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2
        server = self.server("--max_call_work", "100000000")
        stub = self.stub(server)
        generated = e2e_test.generated_trace(stub, "gpt2-xl", layers=8)
        request = service_pb2.CompareRequest(
            trace=generated.trace, hardware=generated.hardware,
            budgets=[plan_pb2.Budget(fraction_of_peak=0.3 + 0.02 * i) for i in range(32)],
            policies=[planning_pb2.POLICY_GENETIC_SEARCH, planning_pb2.POLICY_SWAPADVISOR],
            genetic_search_evaluations=100000)
        start = time.monotonic()
        with self.assertRaises(grpc.RpcError) as refused:
            stub.Compare(request, timeout=60)
        self.assertEqual(refused.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertTrue(refused.exception.details().startswith("budgets: "),
                        refused.exception.details())
        self.assertIn("--max_call_work", refused.exception.details())
        # Refused before any planning: the same request with one budget, one
        # policy and few evaluations is served.
        del request.budgets[1:]
        del request.policies[1:]
        request.genetic_search_evaluations = 100
        response = stub.Compare(request, timeout=60)
        self.assertEqual(len(response.comparison.entries), 1)
        self.assertLess(time.monotonic() - start, 60)

    # --- Items 4 and 5: the generator's bounds, through the service. ---

    def test_generate_trace_refuses_huge_or_overflowing_traces_up_front(self):
        import grpc
        from slackswap.v1 import service_pb2
        server = self.server()
        stub = self.stub(server)
        e2e_test.generated_trace(stub)  # warm up
        before = peak_rss_bytes(server.proc.pid)
        with self.assertRaises(grpc.RpcError) as huge:
            stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                workload_preset="gpt2-xl", hardware_preset="a100", layers=100000), timeout=60)
        self.assertEqual(huge.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
        self.assertTrue(huge.exception.details().startswith("layers: "), huge.exception.details())
        # 100,000 layers took 822 MB before failing; refused before building.
        if not SANITIZED:
            self.assertLess(peak_rss_bytes(server.proc.pid) - before, 64 << 20)
        with self.assertRaises(grpc.RpcError) as overflow:
            stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                workload_preset="gpt2-xl", hardware_preset="a100", batch=65536,
                sequence_length=1 << 22), timeout=60)
        self.assertEqual(overflow.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertTrue(overflow.exception.details().startswith("batch: "),
                        overflow.exception.details())
        self.assertIsNone(server.proc.poll(), "the server must still run")

    # --- Item 7 and the metrics address. ---

    def test_idle_connections_do_not_block_scrapes(self):
        server = self.server()
        idle = [socket.create_connection(("127.0.0.1", server.metrics_port)) for _ in range(8)]
        try:
            start = time.monotonic()
            with urllib.request.urlopen(
                    f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=10) as r:
                self.assertIn("slackswap_inflight_requests", r.read().decode())
            # civetweb answered after 30 s; a scrape is served while they wait.
            self.assertLess(time.monotonic() - start, 10)
        finally:
            for s in idle:
                s.close()

    def test_metrics_on_an_ipv6_address(self):
        try:
            probe = socket.socket(socket.AF_INET6)
            probe.bind(("::1", 0))
            probe.close()
        except OSError:
            self.skipTest("no IPv6 loopback here")
        import subprocess
        proc = subprocess.Popen([e2e_test.ARGS.server, "--listen", "127.0.0.1:0",
                                 "--metrics", "[::1]:0", "--call_log", "none"],
                                stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            port = None
            for _ in range(3):
                line = proc.stdout.readline()
                if m := re.match(r"metrics on port (\d+)", line):
                    port = int(m.group(1))
                    break
            self.assertIsNotNone(port, "the server should start with an IPv6 metrics address")
            with urllib.request.urlopen(f"http://[::1]:{port}/metrics", timeout=10) as r:
                self.assertIn("slackswap_build_info", r.read().decode())
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)
            proc.stdout.close()

    # --- Names that are not UTF-8. ---

    def test_names_that_are_not_utf8_are_refused_without_a_log_line_per_call(self):
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2
        server = self.server()
        stub = self.stub(server)
        generated = e2e_test.generated_trace(stub)
        good = service_pb2.PlanRequest(trace=generated.trace, hardware=generated.hardware,
                                       budget=plan_pb2.Budget(fraction_of_peak=0.5))
        raw = good.SerializeToString()
        # Python protobuf will not set such a name: edit the bytes. The tensor's
        # name goes through the server's trace decoder, the hardware's through
        # protobuf.
        tensor_name = generated.trace.tensors[3].name.encode()
        bad_tensor = raw.replace(tensor_name, b"\xff" * len(tensor_name), 1)
        hardware_name = generated.hardware.name.encode()
        position = raw.rfind(hardware_name)
        bad_hardware = raw[:position] + b"\xc3" * len(hardware_name) + raw[position + len(
            hardware_name):]
        raw_channel = server.channel()
        plan = raw_channel.unary_unary("/slackswap.v1.PlannerService/Plan")
        for _ in range(5):
            with self.assertRaises(grpc.RpcError) as e:
                plan(bad_tensor, timeout=30)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertRegex(e.exception.details(),
                             r"^trace\.(operators|tensors)\[\d+\]\.name: not valid UTF-8")
            with self.assertRaises(grpc.RpcError) as e:
                plan(bad_hardware, timeout=30)
            self.assertEqual(e.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        raw_channel.close()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=30)
        server.reader.join(timeout=10)
        # The call log has its one line per call, and protobuf adds none.
        calls = [line for line in server.lines if line.startswith('{"time"')]
        self.assertEqual(sum('"method":"Plan"' in line for line in calls), 10, calls)
        output = "".join(line for line in server.lines if line not in calls)
        self.assertIn("drained", output)
        self.assertNotIn("UTF-8", output)
        self.assertNotIn("libprotobuf", output)

    # --- A drain stops planning at the end of the grace period. ---

    def test_sigterm_stops_long_planning_after_the_grace_period(self):
        import grpc
        import threading
        from slackswap.v1 import service_pb2
        server = self.server("--grace", "1s", "--planning_threads", "1")
        stub = self.stub(server)
        # A frontier of a large trace: some 30 plans of about a second each.
        trace = shaped_trace(30_000, "tensors")
        request = service_pb2.FrontierRequest(trace=trace, hardware=a100(),
                                              target_throughput_ratio=0.999)
        outcome = {}

        def call():
            try:
                stub.Frontier(request, timeout=300)
                outcome["code"] = grpc.StatusCode.OK
            except grpc.RpcError as e:
                outcome["code"] = e.code()
        caller = threading.Thread(target=call)
        caller.start()
        deadline = time.time() + 30
        while e2e_test.metric_value(server.metrics_port, "slackswap_plans_total",
                                    {"grpc_method": "Frontier"}) < 1:
            self.assertLess(time.time(), deadline, "the frontier never started planning")
            time.sleep(0.05)
        start = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.wait(timeout=60)
        stopped_after = time.monotonic() - start
        caller.join(timeout=60)
        self.assertEqual(server.proc.returncode, 0)
        self.assertNotEqual(outcome.get("code"), grpc.StatusCode.OK)
        # The grace period and one planning step, far from the frontier's work.
        self.assertLess(stopped_after, 15, f"{stopped_after:.1f} s")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--proto-dir", required=True)
    e2e_test.run(parser)


if __name__ == "__main__":
    main()
