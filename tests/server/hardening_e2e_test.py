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
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2
        budget = plan_pb2.Budget(fraction_of_peak=fraction)
        if kind == "plan":
            return "Plan", service_pb2.PlanRequest(trace=trace, hardware=a100(), budget=budget)
        if kind == "simulate":
            plan = plan_pb2.Plan(tensors=[plan_pb2.TensorPlan(decision=plan_pb2.DECISION_KEEP)
                                          for _ in trace.tensors])
            return "Simulate", service_pb2.SimulateRequest(
                trace=trace, hardware=a100(), budget=plan_pb2.Budget(unlimited=True), plan=plan,
                include_timeline=True)
        return "Compare", service_pb2.CompareRequest(
            trace=trace, hardware=a100(), budgets=[budget],
            policies=[planning_pb2.POLICY_GENETIC_SEARCH], genetic_search_evaluations=100)

    def call(self, stub, kind, trace):
        method, request = self.request(kind, trace)
        return getattr(stub, method)(request, timeout=300)

    @unittest.skipIf(SANITIZED, "memory figures are meaningless under AddressSanitizer")
    def test_an_accepted_call_stays_within_the_per_call_memory_limit(self):
        """The server estimates a call's memory from its trace before planning.
        For each shape and kind of call, a trace just under the limit by that
        estimate must plan within the limit in fact (peak RSS of a fresh server
        process), and a trace over it is refused naming the trace."""
        import grpc
        limit = 32 << 20
        for shape, kind in [("operators", "plan"), ("tensors", "plan"), ("relations", "plan"),
                            ("operators", "simulate"), ("tensors", "compare")]:
            with self.subTest(shape=shape, kind=kind):
                # Over the limit: refused before planning, naming the trace, and the
                # message says what the estimate was.
                probe = e2e_test.Server("--max_call_memory_bytes", str(limit))
                try:
                    probe_n = 150_000
                    with probe.channel() as channel, self.assertRaises(grpc.RpcError) as refused:
                        self.call(self.stub_on(channel), kind, shaped_trace(probe_n, shape))
                finally:
                    probe.stop()
                self.assertEqual(refused.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
                message = refused.exception.details()
                self.assertTrue(message.startswith("trace: "), message)
                estimate = float(re.search(r"needs about (\d+) MiB", message).group(1))
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
