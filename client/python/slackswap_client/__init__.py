"""slackswap_client: profile a PyTorch training step into a slackswap.v1 trace,
ask a slackswap-server for a plan, and apply it in training.

    from slackswap_client import profile, Client, Runtime
    trace = profile(model, (tokens,), loss_fn=lambda out: out.float().pow(2).mean(),
                    timing="modelled", hardware="a100")
    with Client("localhost:50051") as client:
        report = client.plan(trace, hardware="a100", budget_fraction=0.5).report
    for batch in batches:                 # the same step, step after step
        with Runtime(trace, report):
            loss_fn(model(batch)).backward()
        optimizer.step()
"""
from .profiler import profile, ProfileError
from .client import Client, PlanningError
from .runtime import BudgetError, MismatchError, PlanError, Runtime
from .hardware import HARDWARE_PRESETS, hardware_proto
from .timeline import chrome_trace_json

__all__ = ["profile", "ProfileError", "Client", "PlanningError", "Runtime", "MismatchError",
           "BudgetError", "PlanError",
           "HARDWARE_PRESETS", "hardware_proto", "chrome_trace_json"]
