"""A client of slackswap-server for training launchers."""
import grpc

from . import stubs
from .hardware import HARDWARE_PRESETS, hardware_proto


class Client:
    """Plans traces on a slackswap-server.

    address: "host:port" or any gRPC target. With `root_certificates` (PEM
    bytes) the channel uses TLS; `private_key` and `certificate_chain` add a
    client certificate (mutual TLS). `deadline` is seconds per call.
    """

    def __init__(self, address, root_certificates=None, private_key=None, certificate_chain=None,
                 deadline=60.0):
        stubs.load()
        from slackswap.v1 import service_pb2_grpc
        from slackswap_health import health_pb2_grpc
        options = [("grpc.max_receive_message_length", -1), ("grpc.max_send_message_length", -1)]
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

    def plan(self, trace, hardware="a100", budget_bytes=None, budget_fraction=None):
        """Plans `trace` (a slackswap.v1.Trace) and returns the PlanningReport."""
        from slackswap.v1 import service_pb2
        request = service_pb2.PlanRequest(trace=trace, hardware=self._hardware(hardware),
                                          budget=self._budget(budget_bytes, budget_fraction))
        return self._planner.Plan(request, timeout=self.deadline).report

    def simulate(self, trace, plan, hardware="a100", budget_bytes=None, budget_fraction=None):
        """Replays `plan` and returns its slackswap.v1.Metrics."""
        from slackswap.v1 import service_pb2
        request = service_pb2.SimulateRequest(trace=trace, hardware=self._hardware(hardware),
                                              budget=self._budget(budget_bytes, budget_fraction),
                                              plan=plan)
        return self._planner.Simulate(request, timeout=self.deadline).metrics

    def healthy(self, service="slackswap.v1.PlannerService"):
        """True if the server reports SERVING for `service`."""
        from slackswap_health import health_pb2
        response = self._health.Check(health_pb2.HealthCheckRequest(service=service),
                                      timeout=self.deadline)
        return response.status == health_pb2.HealthCheckResponse.SERVING


__all__ = ["Client", "HARDWARE_PRESETS"]
