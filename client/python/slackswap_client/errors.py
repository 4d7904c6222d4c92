"""The errors a Runtime raises (slackswap_client and slackswap_client.runtime
export them)."""


class MismatchError(RuntimeError):
    """The step differs from the profiled trace."""


class PlanError(ValueError):
    """The report holds no plan to run (its outcome is not PLANNED): running
    its fallback plan would take more memory than the budget."""


class BudgetError(RuntimeError):
    """A step cannot start within the budget and nothing pending frees memory.
    The event model proves this unreachable for a plan the service returned
    (docs/event-model.md, "Prefetch admission"); a plan made by hand, or for
    another trace, can reach it."""
