"""End-to-end tests of the real slackswap-server process, on loopback only.

A Python client (Debian's python3-grpcio, stubs generated here at test time)
plans, checks health and reads error details; the CLI runs against the server
and in-process and must print the same; a real Prometheus server scrapes the
metrics; overload, oversized and garbage requests, graceful shutdown under
load, and determinism across two server processes.

Run by ctest: e2e_test.py --server BIN --cli BIN --proto-dir DIR
"""
import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.parse
import urllib.request

ARGS = None
STUBS = None  # module namespace holder


def generate_stubs(proto_dir, out_dir):
    """Generates Python stubs for the service, google.rpc and health protos.

    Uses the system protoc (3.21, with proto3 optional) and gRPC's Python plugin,
    both from Debian's protobuf-compiler-grpc.
    """
    # health.proto lives under a folder named grpc/, which would shadow the grpc
    # package once generated: copy it under another name first.
    src = os.path.join(out_dir, "src")
    os.makedirs(os.path.join(src, "healthcheck"))
    shutil.copy("/usr/share/grpc-proto/grpc/health/v1/health.proto",
                os.path.join(src, "healthcheck"))
    os.makedirs(os.path.join(src, "reflectioncheck"))
    shutil.copy("/usr/share/grpc-proto/grpc/reflection/v1alpha/reflection.proto",
                os.path.join(src, "reflectioncheck"))
    protos = [
        "slackswap/v1/trace.proto", "slackswap/v1/hardware.proto", "slackswap/v1/plan.proto",
        "slackswap/v1/simulation.proto", "slackswap/v1/planning.proto",
        "slackswap/v1/service.proto", "google/rpc/status.proto", "google/rpc/error_details.proto",
        "healthcheck/health.proto", "reflectioncheck/reflection.proto",
    ]
    subprocess.run(["protoc", f"-I{proto_dir}", f"-I{src}", f"--python_out={out_dir}",
                    f"--grpc_python_out={out_dir}",
                    "--plugin=protoc-gen-grpc_python=/usr/bin/grpc_python_plugin", *protos],
                   check=True)
    sys.path.insert(0, out_dir)


class CountingRelay:
    """A loopback TCP relay to `port` that counts the bytes it passes back."""

    def __init__(self, port):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.target = port
        self.back = 0
        self.threads = []
        self.accepter = threading.Thread(target=self._accept, daemon=True)
        self.accepter.start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self.target))
            for src, dst, back in ((client, upstream, False), (upstream, client, True)):
                t = threading.Thread(target=self._pump, args=(src, dst, back), daemon=True)
                t.start()
                self.threads.append(t)

    def _pump(self, src, dst, back):
        try:
            while data := src.recv(65536):
                if back:
                    self.back += len(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def stop(self):
        """Closes the relay; returns the bytes it passed back."""
        self.listener.close()
        for t in self.threads:
            t.join(timeout=5)
        return self.back


class Server:
    """A slackswap-server process on an ephemeral loopback port."""

    def __init__(self, *extra, wrapper=()):
        """`extra`: server flags; `wrapper`: a command the server runs under."""
        self.proc = subprocess.Popen(
            [*wrapper, ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0",
             *extra],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        self.port = self.metrics_port = self.planning_threads = None
        self.lines = []
        deadline = time.time() + 20
        while time.time() < deadline and None in (self.port, self.metrics_port,
                                                  self.planning_threads):
            line = self.proc.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            if m := re.match(r"listening on port (\d+)", line):
                self.port = int(m.group(1))
            if m := re.match(r"metrics on port (\d+)", line):
                self.metrics_port = int(m.group(1))
            if m := re.match(r"planning threads (\d+)", line):
                self.planning_threads = int(m.group(1))
        if self.port is None:
            self.proc.kill()
            raise RuntimeError("server did not start: " + "".join(self.lines))
        self.address = f"127.0.0.1:{self.port}"
        # The server logs a line per call: keep reading them, so that the pipe
        # never fills and blocks it.
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def call_log(self):
        """The JSON call-log lines so far, parsed."""
        return [json.loads(line) for line in list(self.lines) if line.startswith('{"time"')]

    def channel(self, **options):
        import grpc
        return grpc.insecure_channel(self.address, options=[
            ("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1),
            *options.items()])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(timeout=10)
        self.proc.stdout.close()


def metric_value(metrics_port, name, labels=None):
    """Sums a series from a server's /metrics text (0 when it has none)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as r:
        text = r.read().decode()
    total = 0.0
    for line in text.splitlines():
        if (line.startswith(name + "{") or line.startswith(name + " ")) and all(
                f'{k}="{v}"' in line for k, v in (labels or {}).items()):
            total += float(line.rsplit(" ", 1)[1])
    return total


def trace_pb2_from(data):
    from slackswap.v1 import trace_pb2
    return trace_pb2.Trace.FromString(data)


def genetic_search_compare(generated, evaluations):
    """A Compare that keeps a planning thread busy: a genetic search at 50%."""
    from slackswap.v1 import plan_pb2, planning_pb2, service_pb2
    return service_pb2.CompareRequest(
        trace=generated.trace, hardware=generated.hardware,
        budgets=[plan_pb2.Budget(fraction_of_peak=0.5)],
        policies=[planning_pb2.POLICY_GENETIC_SEARCH], genetic_search_evaluations=evaluations)


def generated_trace(stub, preset="llama-7b", layers=4):
    from slackswap.v1 import service_pb2
    return stub.GenerateTrace(service_pb2.GenerateTraceRequest(
        workload_preset=preset, hardware_preset="a100", layers=layers), timeout=30)


class ServerTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = Server()
        from slackswap.v1 import service_pb2_grpc
        cls.channel = cls.server.channel()
        cls.stub = service_pb2_grpc.PlannerServiceStub(cls.channel)
        cls.generated = generated_trace(cls.stub)

    @classmethod
    def tearDownClass(cls):
        cls.channel.close()
        cls.server.stop()

    def plan_request(self, fraction=0.5):
        from slackswap.v1 import plan_pb2, service_pb2
        return service_pb2.PlanRequest(trace=self.generated.trace, hardware=self.generated.hardware,
                                       budget=plan_pb2.Budget(fraction_of_peak=fraction))

    def test_python_client_plans_and_checks_health(self):
        from healthcheck import health_pb2, health_pb2_grpc
        from slackswap.v1 import planning_pb2
        import grpc
        response = self.stub.Plan(self.plan_request(0.5), timeout=30)
        report = response.report
        self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED)
        self.assertLessEqual(report.metrics.peak_resident_bytes, report.metrics.budget_bytes)
        self.assertGreater(report.metrics.throughput_ratio, 0.5)
        self.assertLessEqual(report.lower_bound_ns, report.metrics.iteration_ns)
        health = health_pb2_grpc.HealthStub(self.channel)
        for service in ("", "slackswap.v1.PlannerService"):
            status = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status
            self.assertEqual(status, health_pb2.HealthCheckResponse.SERVING, service)
        with self.assertRaises(grpc.RpcError) as unknown:
            health.Check(health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=5)
        self.assertEqual(unknown.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_reflection_lists_the_services(self):
        from reflectioncheck import reflection_pb2, reflection_pb2_grpc
        stub = reflection_pb2_grpc.ServerReflectionStub(self.channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        responses = list(stub.ServerReflectionInfo(iter([request]), timeout=10))
        names = {s.name for s in responses[0].list_services_response.service}
        self.assertIn("slackswap.v1.PlannerService", names)
        self.assertIn("grpc.health.v1.Health", names)
        # Each service can be described, the health service too.
        from google.protobuf import descriptor_pb2
        for service, file in (("slackswap.v1.PlannerService", "slackswap/v1/service.proto"),
                              ("grpc.health.v1.Health", "grpc/health/v1/health.proto")):
            request = reflection_pb2.ServerReflectionRequest(file_containing_symbol=service)
            (response,) = stub.ServerReflectionInfo(iter([request]), timeout=10)
            self.assertFalse(response.HasField("error_response"), (service, response))
            files = [descriptor_pb2.FileDescriptorProto.FromString(b)
                     for b in response.file_descriptor_response.file_descriptor_proto]
            self.assertIn(file, [f.name for f in files])

    def test_invalid_argument_carries_bad_request_field_violations(self):
        import grpc
        from google.rpc import error_details_pb2, status_pb2
        request = self.plan_request()
        request.trace.tensors[3].use_ops[0] = 999999
        with self.assertRaises(grpc.RpcError) as error:
            self.stub.Plan(request, timeout=30)
        self.assertEqual(error.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        details = dict(error.exception.trailing_metadata())["grpc-status-details-bin"]
        status = status_pb2.Status.FromString(details)
        bad_request = error_details_pb2.BadRequest()
        self.assertTrue(status.details[0].Unpack(bad_request))
        self.assertEqual(bad_request.field_violations[0].field, "trace.tensors[3].use_ops[0]")
        self.assertLess(len(error.exception.details()), 600)

    def test_cli_prints_the_same_against_the_server(self):
        with tempfile.TemporaryDirectory() as work:
            trace = os.path.join(work, "trace.pb")
            with open(trace, "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            commands = [
                ["plan", "--budget", "0.5"],
                ["simulate", "--policy", "all-swap", "--budget", "0.5"],
                ["compare", "--budgets", "0.4,0.6", "--policies", "slackswap,vdnn,checkpointing"],
                ["frontier", "--target", "0.95", "--fractions", "0.3,0.5,0.7"],
            ]
            for command in commands:
                args = [ARGS.cli, *command, "--trace", trace, "--hardware", "a100"]
                local = subprocess.run(args, capture_output=True, text=True, timeout=120)
                remote = subprocess.run(args + ["--server", self.server.address],
                                        capture_output=True, text=True, timeout=120)
                self.assertEqual(local.returncode, 0, local.stderr)
                self.assertEqual(remote.returncode, 0, remote.stderr)
                strip = lambda s: re.sub(r"planned in [0-9.]+ ms", "planned in X ms", s)
                self.assertEqual(strip(local.stdout), strip(remote.stdout), command)
            # An error from the server keeps its field path.
            bad = subprocess.run([ARGS.cli, "generate", "--preset", "gpt2-xl", "--batch", "-3",
                                  "--server", self.server.address],
                                 capture_output=True, text=True, timeout=60)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("batch", bad.stderr)
            # Two violations found by the server: the remote call fails as the
            # local one does, every field violation listed.
            args = [ARGS.cli, "generate", "--preset", "gpt2-xl", "--batch", "-3", "--seq", "-5"]
            local = subprocess.run(args, capture_output=True, text=True, timeout=60)
            remote = subprocess.run(args + ["--server", self.server.address],
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual((local.returncode, remote.returncode), (1, 1))
            self.assertEqual(local.stderr, remote.stderr)
            listed = [line.strip() for line in remote.stderr.splitlines()
                      if line.startswith("  ")]
            self.assertEqual([line.split(":")[0] for line in listed],
                             ["batch", "sequence_length"], remote.stderr)

    def test_bench_server_reports_the_cpu_time_of_the_process_it_is_given(self):
        with tempfile.TemporaryDirectory() as work:
            trace = os.path.join(work, "trace.pb")
            with open(trace, "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            idle = subprocess.Popen(["sleep", "60"])
            try:
                reports = {}
                for name, pid in (("server", self.server.proc.pid), ("idle", idle.pid)):
                    run = subprocess.run(
                        [ARGS.cli, "bench-server", "--server", self.server.address,
                         "--server_pid", str(pid), "--trace", trace, "--hardware", "a100",
                         "--budget", "0.5", "--concurrency", "4", "--duration", "1s", "--json"],
                        capture_output=True, text=True, timeout=60)
                    self.assertEqual(run.returncode, 0, run.stderr)
                    reports[name] = json.loads(run.stdout)
            finally:
                idle.kill()
                idle.wait()
            for report in reports.values():
                self.assertGreater(report["ok"], 0)
                self.assertGreater(report["cpu_seconds"], 0)
            # The server planned every call; the sleeping process did nothing.
            self.assertGreater(reports["server"]["server_cpu_seconds"], 0.05)
            self.assertEqual(reports["idle"]["server_cpu_seconds"], 0)

    def test_each_call_logs_one_json_line_with_its_request_id(self):
        import grpc
        from slackswap.v1 import service_pb2
        metadata = [("x-request-id", "req-42"),
                    ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
        self.stub.Plan(self.plan_request(0.5), timeout=30, metadata=metadata)
        with self.assertRaises(grpc.RpcError):
            self.stub.Plan(service_pb2.PlanRequest(trace=self.generated.trace), timeout=30,
                           metadata=[("x-request-id", "req-43")])
        deadline = time.time() + 10
        while time.time() < deadline:
            lines = {line.get("request_id"): line for line in self.server.call_log()}
            if "req-42" in lines and "req-43" in lines:
                break
            time.sleep(0.05)
        ok, bad = lines["req-42"], lines["req-43"]
        self.assertEqual((ok["method"], ok["code"], ok["level"], ok["msg"]),
                         ("Plan", "OK", "info", "call"))
        self.assertEqual(ok["traceparent"], metadata[1][1])
        self.assertEqual(ok["trace_operators"], len(self.generated.trace.operators))
        self.assertEqual(ok["trace_tensors"], len(self.generated.trace.tensors))
        self.assertEqual(ok["request_bytes"], self.plan_request(0.5).ByteSize())
        self.assertGreater(ok["response_bytes"], 0)
        self.assertGreaterEqual(ok["duration_ms"], ok["queue_wait_ms"])
        self.assertTrue(ok["peer"].startswith("ipv4:127.0.0.1:"), ok["peer"])
        self.assertRegex(ok["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
        self.assertNotIn("error", ok)
        self.assertEqual(bad["code"], "INVALID_ARGUMENT")
        self.assertIn("hardware", bad["error"])

    def test_timeline_export_from_the_cli_and_from_python_agree(self):
        import importlib.util
        from slackswap.v1 import plan_pb2, service_pb2, simulation_pb2
        repo = os.path.dirname(os.path.abspath(ARGS.proto_dir))
        spec = importlib.util.spec_from_file_location(
            "timeline", os.path.join(repo, "client", "python", "slackswap_client", "timeline.py"))
        timeline = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(timeline)
        name = "all-swap at 30%: llama-7b"
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "t.pb"), "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            subprocess.run([ARGS.cli, "simulate", "--trace", os.path.join(work, "t.pb"),
                            "--hardware", "a100", "--budget", "0.3", "--policy", "all-swap",
                            "--plan_out", os.path.join(work, "plan.pb"), "--timeline",
                            os.path.join(work, "cli.json"), "--timeline_name", name],
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(work, "cli.json")) as f:
                from_cli = f.read()
            with open(os.path.join(work, "plan.pb"), "rb") as f:
                plan = plan_pb2.Plan.FromString(f.read())
        response = self.stub.Simulate(service_pb2.SimulateRequest(
            trace=self.generated.trace, hardware=self.generated.hardware,
            budget=plan_pb2.Budget(fraction_of_peak=0.3), plan=plan, include_timeline=True),
            timeout=30)
        from_python = timeline.chrome_trace_json(self.generated.trace, response.timeline,
                                                 response.metrics, name)
        self.assertEqual(from_python, from_cli)
        # With node physics the slowed slices carry slowed_ns, alike in both.
        with tempfile.TemporaryDirectory() as work:
            with open(os.path.join(work, "t.pb"), "wb") as f:
                f.write(self.generated.trace.SerializeToString())
            with open(os.path.join(work, "plan.pb"), "wb") as f:
                f.write(plan.SerializeToString())
            subprocess.run([ARGS.cli, "simulate", "--trace", os.path.join(work, "t.pb"),
                            "--hardware", "a100", "--budget", "0.3", "--plan",
                            os.path.join(work, "plan.pb"), "--gpus_per_link", "2",
                            "--uplink_gbps", "25", "--hbm_contention", "--timeline",
                            os.path.join(work, "node.json"), "--timeline_name", name],
                           check=True, capture_output=True, timeout=60)
            with open(os.path.join(work, "node.json")) as f:
                node_cli = f.read()
        hardware = type(self.generated.hardware)()
        hardware.CopyFrom(self.generated.hardware)
        hardware.gpus_per_uplink = 2
        hardware.uplink_d2h_bytes_per_second = 25 * 10**9
        hardware.uplink_h2d_bytes_per_second = 25 * 10**9
        shared = self.stub.Simulate(service_pb2.SimulateRequest(
            trace=self.generated.trace, hardware=hardware,
            budget=plan_pb2.Budget(fraction_of_peak=0.3), plan=plan, include_timeline=True,
            physics=simulation_pb2.Physics(hbm_contention=True)), timeout=30)
        self.assertEqual(timeline.chrome_trace_json(self.generated.trace, shared.timeline,
                                                    shared.metrics, name), node_cli)
        self.assertIn('"slowed_ns":', node_cli)
        events = json.loads(from_cli)["traceEvents"]
        names = {e["args"]["name"] for e in events if e.get("name") == "process_name"}
        self.assertEqual(names, {name})
        self.assertEqual({e["pid"] for e in events}, {timeline.process_id(name)})
        slices = [e for e in events if e["ph"] == "X"]
        self.assertLessEqual({"op", "offload", "prefetch", "stall"}, {e["cat"] for e in slices})
        # Labelled stall slices that add up to the metrics' waits.
        stalls = [e for e in slices if e["cat"] == "stall"]
        waited = (response.metrics.prefetch_wait_ns + response.metrics.memory_wait_ns +
                  response.metrics.barrier_wait_ns)
        self.assertGreater(waited, 0)
        self.assertAlmostEqual(sum(e["dur"] for e in stalls) * 1000, waited, delta=len(stalls))
        self.assertTrue(all(e["name"] == "stall: " + e["args"]["cause"] for e in stalls))
        # Bytes in the transfers' args, and the budget as a counter.
        offload = next(e for e in slices if e["cat"] == "offload")
        self.assertEqual(offload["args"]["bytes"],
                         self.generated.trace.tensors[offload["args"]["index"]].size_bytes)
        budget = [e for e in events if e.get("name") == "budget_bytes"]
        self.assertEqual([e["args"]["bytes"] for e in budget],
                         [response.metrics.budget_bytes] * 2)

    def test_help_lists_the_flags_and_version_names_the_build(self):
        # A successful --help exits 0 with the flags on standard output, on both
        # binaries; an unknown flag still fails.
        for binary, flags in ((ARGS.server, ("--listen", "--metrics", "--max_concurrent_requests",
                                             "--tls_cert", "--grace", "--max_call_work")),
                              (ARGS.cli, ("--budget", "--search_ms", "--uplink_gbps"))):
            helped = subprocess.run([binary, "--help"], capture_output=True, text=True,
                                    timeout=30)
            self.assertEqual(helped.returncode, 0, helped.stderr)
            for flag in flags:
                self.assertIn(flag, helped.stdout)
            wrong = subprocess.run([binary, "--no_such_flag"], capture_output=True, text=True,
                                   timeout=30)
            self.assertNotEqual(wrong.returncode, 0)
            self.assertIn("no_such_flag", wrong.stderr)
        versioned = subprocess.run([ARGS.server, "--version"], capture_output=True, text=True,
                                   timeout=30)
        self.assertEqual(versioned.returncode, 0, versioned.stderr)
        self.assertRegex(versioned.stdout, r"^slackswap-server \d+\.\d+\.\d+ \(revision \S+\)\n$")

    def test_garbage_bytes_do_not_hurt_the_server(self):
        import grpc
        with socket.create_connection(("127.0.0.1", self.server.port), timeout=5) as s:
            s.sendall(os.urandom(4096))
            try:
                s.recv(1024)
            except OSError:
                pass
        raw = self.channel.unary_unary("/slackswap.v1.PlannerService/Plan",
                                       request_serializer=lambda b: b,
                                       response_deserializer=lambda b: b)
        with self.assertRaises(grpc.RpcError) as error:
            raw(b"\xff\xff\xff\xff\x0f\x12garbage", timeout=10)
        self.assertEqual(error.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("slackswap.v1.PlanRequest", error.exception.details())
        self.assertIsNone(self.server.proc.poll())
        self.stub.Plan(self.plan_request(0.6), timeout=30)

    def test_node_physics_from_python_reach_the_plan_and_the_metrics(self):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, simulation_pb2
        request = self.plan_request(0.4)
        request.hardware.gpus_per_uplink = 2
        request.hardware.uplink_d2h_bytes_per_second = request.hardware.d2h_bytes_per_second
        request.hardware.uplink_h2d_bytes_per_second = request.hardware.h2d_bytes_per_second
        request.physics.allocator = simulation_pb2.ALLOCATOR_MODEL_CACHING
        request.physics.hbm_contention = True
        report = self.stub.Plan(request, timeout=30).report
        self.assertEqual(report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, report.reason)
        self.assertGreater(report.metrics.uplink_wait_ns, 0)
        self.assertGreaterEqual(report.metrics.peak_reserved_bytes,
                                report.metrics.peak_resident_bytes)
        port = self.server.metrics_port
        self.assertGreaterEqual(metric_value(port, "slackswap_plan_reserved_bytes_count",
                                             {"policy": "slackswap"}), 1)
        self.assertGreater(metric_value(port, "slackswap_plan_uplink_wait_seconds_sum",
                                        {"policy": "slackswap"}), 0)
        node = service_pb2.PlanNodeRequest(hardware=request.hardware)
        for fraction in (0.4, 0.6):
            node.jobs.add(name=f"job-{fraction}", trace=request.trace, gpus=2,
                          budget=plan_pb2.Budget(fraction_of_peak=fraction))
        answer = self.stub.PlanNode(node, timeout=60)
        self.assertEqual([j.name for j in answer.jobs], ["job-0.4", "job-0.6"])
        for job in answer.jobs:
            self.assertEqual(job.outcome, planning_pb2.PLAN_OUTCOME_PLANNED, job.reason)
            self.assertGreaterEqual(job.shared_step_ns, job.report.metrics.ideal_ns)
        self.assertGreaterEqual(metric_value(port, "slackswap_plans_total",
                                             {"grpc_method": "PlanNode"}), 2)

    def test_prometheus_scrapes_rpc_and_plan_quality_metrics(self):
        from slackswap.v1 import service_pb2
        for fraction in (0.3, 0.5, 0.7):
            self.stub.Plan(self.plan_request(fraction), timeout=30)
        # Frontier points are counted as plans under their method, and stay
        # out of the quality of the plans Plan calls return.
        request = self.plan_request(0.5)
        self.stub.Frontier(service_pb2.FrontierRequest(trace=request.trace,
                                                       hardware=request.hardware), timeout=60)
        port = self.server.metrics_port
        self.assertGreater(metric_value(port, "slackswap_plans_total",
                                        {"grpc_method": "Frontier"}), 5)
        self.assertEqual(metric_value(port, "slackswap_plan_throughput_ratio_count",
                                      {"policy": "slackswap"}),
                         metric_value(port, "slackswap_plans_total",
                                      {"grpc_method": "Plan", "policy": "slackswap",
                                       "outcome": "planned"}))
        with Prometheus(self.server.metrics_port) as prom:
            checks = {
                'grpc_server_handled_total{grpc_method="Plan",grpc_code="OK"}': 1,
                'slackswap_plans_total{policy="slackswap",outcome="planned"}': 1,
                'slackswap_plan_throughput_ratio_count{policy="slackswap"}': 1,
                'grpc_server_handling_seconds_count{grpc_method="Plan"}': 1,
                'slackswap_queue_wait_seconds_count{grpc_method="Plan"}': 1,
                "slackswap_build_info": 1,
                'slackswap_build_info{revision!=""}': 1,
            }
            for query, minimum in checks.items():
                self.assertGreaterEqual(prom.wait_for(query, minimum), minimum, query)
            quantile = prom.query(
                "histogram_quantile(0.5, sum by (le) (slackswap_plan_throughput_ratio_bucket))")
            self.assertTrue(quantile and 0 < float(quantile[0]["value"][1]) <= 1, quantile)


class Prometheus:
    """A real Prometheus server on loopback scraping one target every second."""

    def __init__(self, target_port):
        self.target_port = target_port

    def __enter__(self):
        self.dir = tempfile.mkdtemp()
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    "scrape_configs:\n  - job_name: slackswap\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{self.target_port}']\n")
        self.proc = subprocess.Popen(
            ["prometheus", f"--config.file={config}", f"--storage.tsdb.path={self.dir}/data",
             f"--web.listen-address=127.0.0.1:{self.port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        return self

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def query(self, promql):
        url = f"http://127.0.0.1:{self.port}/api/v1/query?" + urllib.parse.urlencode(
            {"query": promql})
        with urllib.request.urlopen(url, timeout=5) as response:
            body = json.load(response)
        if body.get("status") != "success":
            raise RuntimeError(f"query failed: {promql}: {body}")
        return body["data"]["result"]

    def wait_for(self, promql, minimum, timeout=60):
        """Polls until the query's first value reaches `minimum`; returns the last value."""
        deadline, value = time.time() + timeout, -1.0
        while time.time() < deadline:
            try:
                result = self.query(promql)
                if result:
                    value = float(result[0]["value"][1])
                    if value >= minimum:
                        return value
            except (OSError, RuntimeError):
                pass  # not up yet, or no scrape yet
            time.sleep(0.5)
        return value


class LimitsTest(unittest.TestCase):
    def test_overload_is_refused_fast_and_accepted_calls_succeed(self):
        import grpc
        from slackswap.v1 import service_pb2_grpc
        from healthcheck import health_pb2, health_pb2_grpc
        server = Server("--max_concurrent_requests", "2")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub)
            heavy = genetic_search_compare(g, 40000)
            results = []
            lock = threading.Lock()

            def call():
                start = time.time()
                try:
                    stub.Compare(heavy, timeout=120)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    code = e.code()
                with lock:
                    results.append((code, time.time() - start))

            threads = [threading.Thread(target=call) for _ in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            codes = [c for c, _ in results]
            self.assertGreaterEqual(codes.count(grpc.StatusCode.OK), 2, codes)
            self.assertGreaterEqual(codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED), 1, codes)
            self.assertEqual(len(codes), codes.count(grpc.StatusCode.OK) +
                             codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED), codes)
            refused = [d for c, d in results if c == grpc.StatusCode.RESOURCE_EXHAUSTED]
            served = [d for c, d in results if c == grpc.StatusCode.OK]
            self.assertLess(max(refused), min(served), "refusals must not wait for the work")
            status = health_pb2_grpc.HealthStub(channel).Check(
                health_pb2.HealthCheckRequest(service=""), timeout=5).status
            self.assertEqual(status, health_pb2.HealthCheckResponse.SERVING)
            # Refused calls are in the latency histogram too: one sample per
            # counted call.
            compare = {"grpc_method": "Compare"}
            self.assertEqual(
                metric_value(server.metrics_port, "grpc_server_handling_seconds_count", compare),
                metric_value(server.metrics_port, "grpc_server_handled_total", compare))
            channel.close()
        finally:
            server.stop()

    def test_the_recommended_retry_policy_rides_out_a_busy_replica(self):
        """The retry policy of docs/service.md (the Python client's default):
        a call refused by a busy replica is retried after the pushback and
        succeeds; a request over a limit is not retried."""
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        repo = os.path.dirname(os.path.abspath(ARGS.proto_dir))
        sys.path.insert(0, os.path.join(repo, "client", "python"))
        from slackswap_client import client as python_client
        # One policy, wherever it is written.
        policy = python_client.RETRY_SERVICE_CONFIG
        for doc in ("docs/service.md", "deploy/README.md"):
            with open(os.path.join(repo, doc)) as f:
                text = f.read()
            block = text[text.index("```json\n") + 8:]
            documented = json.loads(block[:block.index("```")])
            self.assertEqual(documented["methodConfig"], policy["methodConfig"], doc)

        server = Server("--max_concurrent_requests", "1", "--max_message_bytes", "65536",
                        "--planning_threads", "1")
        try:
            plain = service_pb2_grpc.PlannerServiceStub(server.channel())
            retrying_channel = grpc.insecure_channel(
                server.address, options=python_client.channel_options(retry=True))
            retrying = service_pb2_grpc.PlannerServiceStub(retrying_channel)
            g = generated_trace(plain)
            # A holds the only slot for half a second (its deadline: its search
            # would take seconds), long enough that B's first attempt is refused.
            heavy = generated_trace(plain, "llama-7b", 16)
            held = []

            def hold():
                try:
                    plain.Compare(genetic_search_compare(heavy, 100000), timeout=0.5)
                    held.append(grpc.StatusCode.OK)
                except grpc.RpcError as e:
                    held.append(e.code())
            busy = threading.Thread(target=hold)
            busy.start()
            time.sleep(0.1)
            request = service_pb2.PlanRequest(trace=g.trace, hardware=g.hardware,
                                              budget=plan_pb2.Budget(fraction_of_peak=0.5))
            retrying.Plan(request, timeout=10, metadata=[("x-request-id", "retry-busy")])
            busy.join()
            self.assertEqual(held, [grpc.StatusCode.DEADLINE_EXCEEDED])
            # A request over the size limit is refused once, not five times.
            with tempfile.TemporaryDirectory() as work:
                path = os.path.join(work, "trace.pb")
                subprocess.run([ARGS.cli, "generate", "--preset", "gpt2-xl", "--out", path],
                               check=True, capture_output=True, timeout=60)
                with open(path, "rb") as f:
                    big = trace_pb2_from(f.read())
            with self.assertRaises(grpc.RpcError) as error:
                retrying.Plan(service_pb2.PlanRequest(trace=big, hardware=g.hardware,
                                                      budget=request.budget),
                              timeout=10, metadata=[("x-request-id", "retry-big")])
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            retrying_channel.close()
            time.sleep(0.2)
            attempts = {}
            for line in server.call_log():
                attempts.setdefault(line.get("request_id"), []).append(line["code"])
            busy_codes = attempts["retry-busy"]
            self.assertGreaterEqual(len(busy_codes), 2, busy_codes)
            self.assertEqual(busy_codes[-1], "OK", busy_codes)
            self.assertTrue(set(busy_codes[:-1]) == {"RESOURCE_EXHAUSTED"}, busy_codes)
            self.assertEqual(attempts["retry-big"], ["RESOURCE_EXHAUSTED"])
        finally:
            server.stop()

    def test_clients_that_keep_alive_often_keep_their_connection(self):
        """A client that pings every second (gRPC keepalive, also when idle):
        with --min_client_ping_interval at or under its interval the
        connection stays up; with gRPC's default (5 minutes) the server closes
        it (GOAWAY too_many_pings), which fails any call in flight, as gRPC's
        default does to clients that keep alive every 10 to 60 s."""
        import grpc
        states = {}
        for interval in ("1s", "5m"):
            server = Server("--min_client_ping_interval", interval)
            try:
                channel = server.channel(**{"grpc.keepalive_time_ms": 1000,
                                            "grpc.keepalive_permit_without_calls": 1,
                                            "grpc.http2.max_pings_without_data": 0,
                                            "grpc.http2.min_time_between_pings_ms": 1000})
                seen = []
                channel.subscribe(seen.append, try_to_connect=True)
                time.sleep(4.5)
                states[interval] = list(seen)
                channel.close()
            finally:
                server.stop()
        ready = grpc.ChannelConnectivity.READY
        self.assertIn(ready, states["1s"], states)
        self.assertEqual(states["1s"][-1], ready, states)
        # Dropped after a few pings: back to IDLE (or failing) once ready.
        dropped = states["5m"][states["5m"].index(ready) + 1:]
        self.assertTrue(dropped, states)

    def test_responses_are_compressed_for_clients_that_accept_it(self):
        """Bytes from the server to the client, through a counting relay, for
        the same GenerateTrace call (a 67 KB response): compressed by default,
        not with --compress_responses=false; a small Plan response is not
        compressed either way."""
        from slackswap.v1 import service_pb2, service_pb2_grpc
        received = {}
        for flag in ("true", "false"):
            server = Server(f"--compress_responses={flag}")
            relay = CountingRelay(server.port)
            try:
                import grpc
                channel = grpc.insecure_channel(f"127.0.0.1:{relay.port}")
                stub = service_pb2_grpc.PlannerServiceStub(channel)
                response = stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                    workload_preset="gpt2-xl", hardware_preset="a100"), timeout=30)
                channel.close()
                received[flag] = relay.stop()
            finally:
                server.stop()
        size = response.ByteSize()
        self.assertGreater(received["false"], size, received)
        self.assertLess(received["true"], size / 2, (received, size))

    def test_a_busy_refusal_carries_retry_info(self):
        import grpc
        from google.rpc import error_details_pb2, status_pb2
        from slackswap.v1 import service_pb2_grpc
        server = Server("--max_concurrent_requests", "1", "--planning_threads", "1")
        try:
            stub = service_pb2_grpc.PlannerServiceStub(server.channel())
            g = generated_trace(stub, "llama-7b", 16)
            busy = threading.Thread(target=lambda: self.assertRaises(
                grpc.RpcError, stub.Compare, genetic_search_compare(g, 100000), timeout=1.0))
            busy.start()
            time.sleep(0.2)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Compare(genetic_search_compare(g, 100), timeout=10)
            busy.join()
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            trailers = dict(error.exception.trailing_metadata())
            self.assertEqual(trailers["grpc-retry-pushback-ms"], "250")
            status = status_pb2.Status.FromString(trailers["grpc-status-details-bin"])
            (detail,) = status.details
            retry = error_details_pb2.RetryInfo()
            self.assertTrue(detail.Unpack(retry))
            self.assertEqual(retry.retry_delay.ToMilliseconds(), 250)
        finally:
            server.stop()

    def test_planning_threads_default_to_the_cpus_the_process_may_use(self):
        # Under taskset one CPU is allowed, however many the machine has; the
        # load generator's in-process default follows the same rule.
        one_cpu = ("taskset", "-c", str(min(os.sched_getaffinity(0))))
        server = Server(wrapper=one_cpu)
        try:
            self.assertEqual(server.planning_threads, 1, server.lines)
        finally:
            server.stop()
        server = Server("--planning_threads", "3")
        try:
            self.assertEqual(server.planning_threads, 3, server.lines)
        finally:
            server.stop()
        out = subprocess.run(
            [*one_cpu, ARGS.cli, "bench-server", "--local", "--preset", "llama-7b",
             "--layers", "2", "--concurrency", "3", "--requests", "3", "--json"],
            check=True, capture_output=True, text=True).stdout
        self.assertEqual(json.loads(out)["planning_threads"], 1, out)

    def test_queue_wait_is_the_time_a_call_waits_for_a_planning_thread(self):
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        server = Server("--planning_threads", "1")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub)
            heavy = genetic_search_compare(g, 100000)
            compare = threading.Thread(target=lambda: stub.Compare(heavy, timeout=120))
            compare.start()
            deadline = time.time() + 30
            while (metric_value(server.metrics_port, "slackswap_inflight_requests") < 1
                   and time.time() < deadline):
                time.sleep(0.005)
            # The one planning thread is busy with the Compare: the Plan waits.
            start = time.time()
            stub.Plan(service_pb2.PlanRequest(
                trace=g.trace, hardware=g.hardware,
                budget=plan_pb2.Budget(fraction_of_peak=0.5)), timeout=120)
            latency = time.time() - start
            compare.join()
            series = "slackswap_queue_wait_seconds"
            plan = {"grpc_method": "Plan"}
            self.assertEqual(metric_value(server.metrics_port, series + "_count", plan), 1)
            self.assertEqual(metric_value(server.metrics_port, series + "_count",
                                          {"grpc_method": "Compare"}), 1)
            waited = metric_value(server.metrics_port, series + "_sum", plan)
            planning = metric_value(server.metrics_port, "slackswap_planning_seconds_sum",
                                    {"policy": "slackswap"})
            # Planning this small trace takes well under a millisecond; the rest
            # of the Plan's latency was the wait behind the Compare.
            self.assertGreater(waited, 10 * planning, (waited, planning, latency))
            self.assertGreater(waited, 0.5 * latency, (waited, latency))
            self.assertLessEqual(waited, latency)
            channel.close()
        finally:
            server.stop()

    def test_oversized_request_is_resource_exhausted(self):
        import grpc
        from slackswap.v1 import plan_pb2, service_pb2, service_pb2_grpc
        server = Server("--max_message_bytes", "65536")
        try:
            channel = server.channel()
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            from slackswap.v1 import trace_pb2

            def trace(layers):
                with tempfile.TemporaryDirectory() as work:
                    path = os.path.join(work, "trace.pb")
                    subprocess.run([ARGS.cli, "generate", "--preset", "gpt2-xl", "--layers",
                                    str(layers), "--out", path],
                                   check=True, capture_output=True, timeout=60)
                    with open(path, "rb") as f:
                        return trace_pb2.Trace.FromString(f.read())

            # Over twice the limit gRPC drops the request before the service
            # sees it.
            big = trace(150)
            self.assertGreater(big.ByteSize(), 2 * 65536)
            small = generated_trace(stub, "llama-7b", 2)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Plan(service_pb2.PlanRequest(trace=big, hardware=small.hardware,
                                                  budget=plan_pb2.Budget(fraction_of_peak=0.5)),
                          timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            # Between the limit and twice it, the service itself refuses the
            # request, says why, and counts it.
            medium = trace(48)
            self.assertGreater(medium.ByteSize(), 65536)
            self.assertLess(medium.ByteSize(), 2 * 65536)
            with self.assertRaises(grpc.RpcError) as error:
                stub.Plan(service_pb2.PlanRequest(trace=medium, hardware=small.hardware,
                                                  budget=plan_pb2.Budget(fraction_of_peak=0.5)),
                          timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("over the server's limit of 65536", error.exception.details())
            # A response over the limit is refused, not counted as OK.
            with self.assertRaises(grpc.RpcError) as error:
                stub.GenerateTrace(service_pb2.GenerateTraceRequest(
                    workload_preset="gpt2-xl", hardware_preset="a100"), timeout=30)
            self.assertEqual(error.exception.code(), grpc.StatusCode.RESOURCE_EXHAUSTED)
            self.assertIn("response:", error.exception.details())
            stub.Plan(service_pb2.PlanRequest(trace=small.trace, hardware=small.hardware,
                                              budget=plan_pb2.Budget(fraction_of_peak=0.8)),
                      timeout=30)
            port = server.metrics_port
            exhausted = {"grpc_code": "RESOURCE_EXHAUSTED"}
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {**exhausted, "grpc_method": "Plan"}), 1)
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {**exhausted, "grpc_method": "GenerateTrace"}), 1)
            self.assertEqual(metric_value(port, "grpc_server_handled_total",
                                          {"grpc_code": "OK", "grpc_method": "Plan"}), 1)
            # Sizes: the two Plan requests that reached the service, and the
            # capacity the server was started with.
            self.assertEqual(metric_value(port, "slackswap_request_bytes_count",
                                          {"grpc_method": "Plan"}), 2)
            self.assertGreater(metric_value(port, "slackswap_request_bytes_sum",
                                            {"grpc_method": "Plan"}), 70000)
            self.assertGreater(metric_value(port, "slackswap_response_bytes_count",
                                            {"grpc_method": "GenerateTrace"}), 0)
            self.assertEqual(metric_value(port, "slackswap_max_concurrent_requests"), 8)
            self.assertGreater(metric_value(port, "process_resident_memory_bytes"), 1e6)
            self.assertGreater(metric_value(port, "process_open_fds"), 3)
            self.assertGreater(metric_value(port, "process_start_time_seconds"),
                               time.time() - 3600)
            channel.close()
        finally:
            server.stop()

    def test_plans_are_identical_across_server_processes(self):
        from slackswap.v1 import plan_pb2, planning_pb2, service_pb2, service_pb2_grpc
        servers = [Server(), Server()]
        try:
            reports = []
            for server in servers:
                channel = server.channel()
                stub = service_pb2_grpc.PlannerServiceStub(channel)
                g = generated_trace(stub, "llama-7b", 8)
                response = stub.Plan(service_pb2.PlanRequest(
                    trace=g.trace, hardware=g.hardware,
                    budget=plan_pb2.Budget(fraction_of_peak=0.4)), timeout=30)
                self.assertEqual(response.report.outcome, planning_pb2.PLAN_OUTCOME_PLANNED)
                self.assertEqual(len(response.report.plan.tensors), len(g.trace.tensors))
                reports.append(response.report.SerializeToString(deterministic=True))
                channel.close()
            self.assertEqual(reports[0], reports[1])
        finally:
            for server in servers:
                server.stop()

    def test_an_idle_server_exits_once_drained(self):
        """After its metrics endpoint served a scrape (prometheus-cpp's exposer
        held the exit about 2 s), a drained server exits at once."""
        server = Server()
        try:
            self.assertEqual(metric_value(server.metrics_port, "slackswap_build_info"), 1)
            start = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            self.assertEqual(server.proc.wait(timeout=30), 0)
            self.assertLess(time.monotonic() - start, 1.5)
        finally:
            server.stop()

    def test_sigterm_under_load_loses_no_accepted_call(self):
        import grpc
        from slackswap.v1 import service_pb2_grpc
        server = Server("--max_concurrent_requests", "8", "--grace", "30s")
        channel = server.channel()
        stub = service_pb2_grpc.PlannerServiceStub(channel)
        g = generated_trace(stub)
        work = genetic_search_compare(g, 20000)
        outcomes = []
        lock = threading.Lock()
        stop_at = time.time() + 4

        def caller():
            while time.time() < stop_at:
                start = time.time()
                try:
                    stub.Compare(work, timeout=60)
                    code = grpc.StatusCode.OK
                except grpc.RpcError as e:
                    code = e.code()
                with lock:
                    outcomes.append((code, start, time.time()))
                if code != grpc.StatusCode.OK:
                    return

        threads = [threading.Thread(target=caller) for _ in range(4)]
        for t in threads:
            t.start()
        time.sleep(1.5)
        sigterm_at = time.time()
        server.proc.send_signal(signal.SIGTERM)
        exit_code = server.proc.wait(timeout=40)
        exited_after = time.time() - sigterm_at
        for t in threads:
            t.join()
        channel.close()
        self.assertEqual(exit_code, 0)
        self.assertLess(exited_after, 30)
        codes = {c for c, _, _ in outcomes}
        self.assertTrue(codes <= {grpc.StatusCode.OK, grpc.StatusCode.UNAVAILABLE}, outcomes)
        in_flight_at_sigterm = [o for o in outcomes
                                if o[0] == grpc.StatusCode.OK and o[1] < sigterm_at < o[2]]
        self.assertGreaterEqual(len(in_flight_at_sigterm), 1, outcomes)
        server.reader.join(timeout=10)
        output = "".join(server.lines)
        server.proc.stdout.close()
        self.assertIn("draining", output)


class TlsTest(unittest.TestCase):
    """TLS and mutual TLS with a throwaway CA made by openssl at test time."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp()
        d = cls.dir

        def run(*args):
            subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=60)

        run("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=test-ca",
            "-keyout", f"{d}/ca.key", "-out", f"{d}/ca.pem")
        with open(f"{d}/san.ext", "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        for name in ("server", "client"):
            run("req", "-newkey", "rsa:2048", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{d}/{name}.key", "-out", f"{d}/{name}.csr")
            run("x509", "-req", "-in", f"{d}/{name}.csr", "-CA", f"{d}/ca.pem", "-CAkey",
                f"{d}/ca.key", "-CAcreateserial", "-days", "2", "-extfile", f"{d}/san.ext",
                "-out", f"{d}/{name}.pem")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def cli_plan(self, server, *flags):
        return subprocess.run([ARGS.cli, "plan", "--preset", "llama-7b", "--layers", "2",
                               "--budget", "0.8", "--deadline", "10s", "--server",
                               f"localhost:{server.port}", *flags],
                              capture_output=True, text=True, timeout=60)

    def test_tls(self):
        d = self.dir
        server = Server("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key")
        try:
            ok = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertEqual(ok.returncode, 0, ok.stderr)
            self.assertIn("lower bound", ok.stdout)
            plaintext = self.cli_plan(server)
            self.assertNotEqual(plaintext.returncode, 0)
        finally:
            server.stop()

    def test_broken_tls_files_stop_the_start_naming_the_flag(self):
        d = self.dir
        with open(os.path.join(d, "garbage.pem"), "w") as f:
            f.write("not a certificate\n")
        for flags, message in (
                (("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/client.key"),
                 "tls_key: not the key of the certificate in tls_cert"),
                (("--tls_cert", f"{d}/garbage.pem", "--tls_key", f"{d}/server.key"),
                 "tls_cert: no PEM certificate"),
                (("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key",
                  "--tls_client_ca", f"{d}/garbage.pem"), "tls_client_ca: no PEM certificate")):
            out = subprocess.run([ARGS.server, "--listen", "127.0.0.1:0", "--metrics", "",
                                  *flags], capture_output=True, text=True, timeout=30)
            self.assertEqual(out.returncode, 1, out.stdout + out.stderr)
            self.assertIn(message, out.stderr)

    def peer_common_name(self, port):
        import ssl
        context = ssl.create_default_context(cafile=f"{self.dir}/ca.pem")
        context.set_alpn_protocols(["h2"])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            with context.wrap_socket(sock, server_hostname="localhost") as tls:
                cert = tls.getpeercert()
        return dict(pair[0] for pair in cert["subject"])["commonName"]

    def test_renewed_certificates_are_served_and_probes_work_over_http(self):
        import grpc
        d = self.dir
        live = os.path.join(d, "live")
        os.makedirs(live, exist_ok=True)
        shutil.copy(f"{d}/server.pem", f"{live}/tls.crt")
        shutil.copy(f"{d}/server.key", f"{live}/tls.key")
        server = Server("--tls_cert", f"{live}/tls.crt", "--tls_key", f"{live}/tls.key",
                        "--tls_reload_interval", "1s", "--grace", "5s")
        try:
            self.assertEqual(self.peer_common_name(server.port), "server")
            # Plain HTTP probes on the metrics port, whatever the gRPC port speaks.
            for path in ("/healthz", "/readyz"):
                with urllib.request.urlopen(
                        f"http://127.0.0.1:{server.metrics_port}{path}", timeout=5) as r:
                    self.assertEqual(r.status, 200, path)
            # A renewed certificate (as cert-manager rotates a Secret) is served
            # to new connections without a restart.
            subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj",
                            "/CN=server-renewed", "-keyout", f"{d}/renewed.key", "-out",
                            f"{d}/renewed.csr"], check=True, capture_output=True, timeout=60)
            subprocess.run(["openssl", "x509", "-req", "-in", f"{d}/renewed.csr", "-CA",
                            f"{d}/ca.pem", "-CAkey", f"{d}/ca.key", "-CAcreateserial", "-days",
                            "2", "-extfile", f"{d}/san.ext", "-out", f"{d}/renewed.pem"],
                           check=True, capture_output=True, timeout=60)
            shutil.copy(f"{d}/renewed.key", f"{live}/tls.key.new")
            shutil.copy(f"{d}/renewed.pem", f"{live}/tls.crt.new")
            os.replace(f"{live}/tls.key.new", f"{live}/tls.key")
            os.replace(f"{live}/tls.crt.new", f"{live}/tls.crt")
            deadline = time.time() + 10
            while self.peer_common_name(server.port) != "server-renewed":
                self.assertLess(time.time(), deadline, "the renewed certificate never served")
                time.sleep(0.2)
            ok = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertEqual(ok.returncode, 0, ok.stderr)
            # Draining: /readyz turns 503 at once while a call still runs.
            from slackswap.v1 import service_pb2_grpc
            with open(f"{d}/ca.pem", "rb") as f:
                credentials = grpc.ssl_channel_credentials(f.read())
            channel = grpc.secure_channel(f"localhost:{server.port}", credentials)
            stub = service_pb2_grpc.PlannerServiceStub(channel)
            g = generated_trace(stub, "llama-7b", 16)
            worker = threading.Thread(target=lambda: self.assertRaises(
                grpc.RpcError, stub.Compare, genetic_search_compare(g, 100000), timeout=3))
            worker.start()
            time.sleep(0.3)
            server.proc.send_signal(signal.SIGTERM)
            code = None
            deadline = time.time() + 3
            while time.time() < deadline and server.proc.poll() is None:
                try:
                    urllib.request.urlopen(
                        f"http://127.0.0.1:{server.metrics_port}/readyz", timeout=1)
                    code = 200
                except urllib.error.HTTPError as e:
                    code = e.code
                    break
                except OSError:
                    break
                time.sleep(0.05)
            worker.join()
            channel.close()
            self.assertEqual(code, 503)
        finally:
            server.stop()

    def test_mutual_tls_requires_a_client_certificate(self):
        d = self.dir
        server = Server("--tls_cert", f"{d}/server.pem", "--tls_key", f"{d}/server.key",
                        "--tls_client_ca", f"{d}/ca.pem")
        try:
            anonymous = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem")
            self.assertNotEqual(anonymous.returncode, 0)
            known = self.cli_plan(server, "--tls_ca", f"{d}/ca.pem", "--tls_cert",
                                  f"{d}/client.pem", "--tls_key", f"{d}/client.key")
            self.assertEqual(known.returncode, 0, known.stderr)
        finally:
            server.stop()


def run(parser, before=None):
    """Parses the arguments (into ARGS), generates the stubs, runs the tests of
    __main__ and exits 0 if they pass. `before(args)` runs first."""
    global ARGS
    ARGS, rest = parser.parse_known_args()
    if before is not None:
        before(ARGS)
    stubs = tempfile.mkdtemp()
    try:
        generate_stubs(ARGS.proto_dir, stubs)
        program = unittest.main(module="__main__", argv=[sys.argv[0], *rest], exit=False,
                                verbosity=2)
        result = program.result
        failed = len(result.failures) + len(result.errors)
        skipped = len(result.skipped)
        print(f"{result.testsRun - failed - skipped} passed, {failed} failed, {skipped} skipped")
        sys.exit(0 if result.wasSuccessful() else 1)
    finally:
        shutil.rmtree(stubs, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--cli", required=True)
    parser.add_argument("--proto-dir", required=True)
    run(parser)


if __name__ == "__main__":
    main()
