"""A client of slackswap-server for training launchers."""
import json

import grpc

from . import stubs
from .hardware import HARDWARE_PRESETS, hardware_proto


def _search(options, search_time_ms, gap_target):
    """`options` (a PlannerOptions, or None) with the anytime search's limits
    set where given."""
    if search_time_ms is None and gap_target is None:
        return options
    from slackswap.v1 import planning_pb2
    out = planning_pb2.PlannerOptions()
    if options is not None:
        out.CopyFrom(options)
    if search_time_ms is not None:
        out.search_time_ms = search_time_ms
    if gap_target is not None:
        out.gap_target = gap_target
    return out


class PlanningError(RuntimeError):
    """A call the server refused: `code` (a grpc.StatusCode), `message`, and
    `violations`, the (field path, description) pairs of the server's
    google.rpc.BadRequest (for INVALID_ARGUMENT), e.g.
    [("trace.tensors[3].use_ops[0]", "op 2 does not come after the producer (op 5)")]."""

    def __init__(self, code, message, violations=()):
        self.code = code
        self.message = message
        self.violations = list(violations)
        text = f"{code.name}: {message}"
        if self.violations:
            text += "".join(f"\n  {field}: {description}"
                            for field, description in self.violations)
        super().__init__(text)


def _decode_error(error):
    """A PlanningError from a grpc.RpcError, with the field violations the
    server put in grpc-status-details-bin."""
    from google.rpc import error_details_pb2, status_pb2
    violations = []
    for key, value in (error.trailing_metadata() or ()):
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
                bad = error_details_pb2.BadRequest()
                detail.Unpack(bad)
                violations.extend((v.field, v.description) for v in bad.field_violations)
    return PlanningError(error.code(), error.details() or "", violations)


# The retry policy docs/service.md recommends (tests/server/limits_e2e_test.py
# checks that they agree and that it rides out a busy replica): a replica that drains refuses new calls with
# UNAVAILABLE and cancels those it received but had not started (CANCELLED);
# a busy one answers RESOURCE_EXHAUSTED with a pushback of when to retry, and
# a request over a limit RESOURCE_EXHAUSTED with a pushback that forbids it.
# Every RPC is idempotent. gRPC retries only requests that fit its per-call
# retry buffer: the channel raises it to 64 MiB, past the server's default
# 32 MiB message limit.
RETRY_SERVICE_CONFIG = {
    "methodConfig": [{
        "name": [{"service": "slackswap.v1.PlannerService"}],
        "retryPolicy": {
            "maxAttempts": 5,
            "initialBackoff": "0.1s",
            "maxBackoff": "2s",
            "backoffMultiplier": 2,
            "retryableStatusCodes": ["UNAVAILABLE", "CANCELLED", "RESOURCE_EXHAUSTED"],
        },
    }],
}
RETRY_BUFFER_BYTES = 64 << 20


def channel_options(retry=True):
    """The options Client opens its channel with: unlimited message sizes
    and, with `retry`, RETRY_SERVICE_CONFIG and a retry buffer that holds any
    request the server takes."""
    options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
    if retry:
        options += [("grpc.enable_retries", 1),
                    ("grpc.service_config", json.dumps(RETRY_SERVICE_CONFIG)),
                    ("grpc.per_rpc_retry_buffer_size", RETRY_BUFFER_BYTES),
                    ("grpc.retry_buffer_size", 4 * RETRY_BUFFER_BYTES)]
    return options


def _policy(policy):
    """A Policy value from a name ("slackswap", "POLICY_VDNN") or number."""
    from slackswap.v1 import planning_pb2
    if policy is None or isinstance(policy, int):
        return policy or 0
    name = policy.strip().upper().replace("-", "_")
    if not name.startswith("POLICY_"):
        name = "POLICY_" + name
    try:
        return planning_pb2.Policy.Value(name)
    except ValueError:
        valid = [n[len("POLICY_"):].lower() for n in planning_pb2.Policy.keys()
                 if n != "POLICY_UNSPECIFIED"]
        raise ValueError(f"unknown policy {policy!r}; valid: {', '.join(valid)}") from None


class Client:
    """Plans traces on a slackswap-server.

    address: "host:port" or any gRPC target. With `root_certificates` (PEM
    bytes) the channel uses TLS; `private_key` and `certificate_chain` add a
    client certificate (mutual TLS). `deadline` is seconds per call, retries
    included; `retry` (default on) retries as RETRY_SERVICE_CONFIG says. A
    call the server refuses raises PlanningError (with its field violations).
    Hardware is a preset name (any case) or a slackswap.v1.Hardware.
    """

    def __init__(self, address, root_certificates=None, private_key=None, certificate_chain=None,
                 deadline=60.0, retry=True):
        stubs.load()
        from slackswap.v1 import service_pb2_grpc
        from slackswap_health import health_pb2_grpc
        options = channel_options(retry)
        if root_certificates is not None:
            credentials = grpc.ssl_channel_credentials(root_certificates, private_key,
                                                       certificate_chain)
            self._channel = grpc.secure_channel(address, credentials, options=options)
        else:
            self._channel = grpc.insecure_channel(address, options=options)
        self._planner = service_pb2_grpc.PlannerServiceStub(self._channel)
        self._health = health_pb2_grpc.HealthStub(self._channel)
        self.deadline = deadline

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._channel.close()

    @staticmethod
    def _hardware(hardware):
        return hardware_proto(hardware) if isinstance(hardware, str) else hardware

    @staticmethod
    def _budget(budget_bytes, budget_fraction):
        from slackswap.v1 import plan_pb2
        if (budget_bytes is None) == (budget_fraction is None):
            raise ValueError("give exactly one of budget_bytes and budget_fraction")
        if budget_bytes is not None:
            return plan_pb2.Budget(bytes=budget_bytes)
        return plan_pb2.Budget(fraction_of_peak=budget_fraction)

    def _call(self, method, request):
        try:
            return method(request, timeout=self.deadline)
        except grpc.RpcError as error:
            raise _decode_error(error) from None

    def generate(self, preset, hardware="a100", batch=0, sequence_length=0, layers=0,
                 offload=None):
        """Builds a trace from a workload preset ("gpt2-xl", "llama-7b", ...)
        on the server and returns the GenerateTraceResponse: `.trace` and
        `.hardware` (the GPU preset's descriptor). 0: the preset's batch,
        sequence length or layers. offload: None (or "none"), "zero",
        "zero-dpu" or "fsdp-cpu" adds the job's own host-link traffic as the
        trace's fixed transfers (docs/workloads.md, "Offload modes"); plan,
        simulate, compare and frontier then share the link with it."""
        from slackswap.v1 import service_pb2
        modes = {None: "OFFLOAD_NONE", "none": "OFFLOAD_NONE", "zero": "OFFLOAD_ZERO",
                 "zero-dpu": "OFFLOAD_ZERO_DPU", "fsdp-cpu": "OFFLOAD_FSDP_CPU"}
        if offload not in modes:
            raise ValueError(f"offload: {offload!r} is not one of none, zero, zero-dpu, "
                             "fsdp-cpu")
        request = service_pb2.GenerateTraceRequest(
            workload_preset=preset, hardware_preset=hardware, batch=batch,
            sequence_length=sequence_length, layers=layers,
            offload=service_pb2.Offload.Value(modes[offload]))
        return self._call(self._planner.GenerateTrace, request)

    def plan(self, trace, hardware="a100", budget_bytes=None, budget_fraction=None,
             policy="slackswap", options=None, physics=None, search_time_ms=None,
             gap_target=None):
        """Plans `trace` (a slackswap.v1.Trace) and returns the PlanResponse:
        `.report` (a PlanningReport: outcome, plan with its schedule, predicted
        metrics, lower bound) and `.planning_time_ns`. policy: a name such as
        "slackswap", "checkpointing", "optimum" (see Policy in planning.proto);
        options: a slackswap.v1.PlannerOptions; physics: a slackswap.v1.Physics
        (the caching allocator, HBM contention; the hardware carries the
        shared uplink). search_time_ms and gap_target set the anytime search
        (PlannerOptions: by default about 160 ms, until the plan is within
        0.5% of the lower bound; 0 ms: no search)."""
        from slackswap.v1 import service_pb2
        request = service_pb2.PlanRequest(trace=trace, hardware=self._hardware(hardware),
                                          budget=self._budget(budget_bytes, budget_fraction),
                                          policy=_policy(policy),
                                          options=_search(options, search_time_ms, gap_target),
                                          physics=physics)
        return self._call(self._planner.Plan, request)

    def simulate(self, trace, plan, hardware="a100", budget_bytes=None, budget_fraction=None,
                 timeline=False, per_layer_barriers=False, physics=None):
        """Replays `plan` and returns the SimulateResponse: `.metrics`, `.plan`
        (with its schedule) and, with timeline=True, `.timeline`."""
        from slackswap.v1 import service_pb2
        request = service_pb2.SimulateRequest(trace=trace, hardware=self._hardware(hardware),
                                              budget=self._budget(budget_bytes, budget_fraction),
                                              plan=plan, include_timeline=timeline,
                                              per_layer_barriers=per_layer_barriers,
                                              physics=physics)
        return self._call(self._planner.Simulate, request)

    def compare(self, trace, hardware="a100", budget_fractions=(), budget_bytes=(),
                policies=("slackswap",), options=None, genetic_search_evaluations=None):
        """Plans every policy at every budget; returns the Comparison."""
        from slackswap.v1 import plan_pb2, service_pb2
        budgets = [plan_pb2.Budget(fraction_of_peak=f) for f in budget_fractions] + \
                  [plan_pb2.Budget(bytes=b) for b in budget_bytes]
        request = service_pb2.CompareRequest(trace=trace, hardware=self._hardware(hardware),
                                             budgets=budgets,
                                             policies=[_policy(p) for p in policies],
                                             options=options)
        if genetic_search_evaluations is not None:
            request.genetic_search_evaluations = genetic_search_evaluations
        return self._call(self._planner.Compare, request).comparison

    def frontier(self, trace, hardware="a100", budget_fractions=(), target_throughput_ratio=0.0,
                 options=None):
        """Throughput against budget, and the smallest budget that reaches
        `target_throughput_ratio`; returns the FrontierResponse."""
        from slackswap.v1 import service_pb2
        request = service_pb2.FrontierRequest(trace=trace, hardware=self._hardware(hardware),
                                              budget_fractions=list(budget_fractions),
                                              target_throughput_ratio=target_throughput_ratio,
                                              options=options)
        return self._call(self._planner.Frontier, request)

    def plan_node(self, jobs, hardware="a100", options=None, physics=None, steps=0):
        """Plans jobs that share one node's host uplink together. jobs: (name,
        trace, budget_fraction, gpus) tuples; hardware: every GPU's links and
        the uplink (uplink_*_bytes_per_second). Returns the PlanNodeResponse:
        per job its plan, its step alone and beside the others, the slowdown
        and the slowdown it causes."""
        from slackswap.v1 import plan_pb2, service_pb2
        request = service_pb2.PlanNodeRequest(hardware=self._hardware(hardware),
                                              options=options, physics=physics, steps=steps)
        for name, trace, fraction, gpus in jobs:
            request.jobs.add(name=name, trace=trace, gpus=gpus,
                             budget=plan_pb2.Budget(fraction_of_peak=fraction))
        return self._call(self._planner.PlanNode, request)

    def healthy(self, service="slackswap.v1.PlannerService"):
        """True if the server reports SERVING for `service`; False if it does
        not, or cannot be reached within the deadline."""
        from slackswap_health import health_pb2
        try:
            response = self._health.Check(health_pb2.HealthCheckRequest(service=service),
                                          timeout=self.deadline)
        except grpc.RpcError:
            return False
        return response.status == health_pb2.HealthCheckResponse.SERVING


__all__ = ["Client", "PlanningError", "HARDWARE_PRESETS"]
