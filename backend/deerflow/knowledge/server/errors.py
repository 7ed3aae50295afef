"""What the run engine refuses, named by whose fault it is; ``_http`` alone turns them into statuses.

The run engine (``_manager``, the coordinators) knows threads and runs, not HTTP: it raises these,
and the gateway's one exception handler answers each with the status ``_http.DOMAIN_STATUS`` gives
it and the message as the error's ``detail``. An application that drives ``RunManager`` itself
catches them as plain exceptions.
"""

from __future__ import annotations

__all__ = ["GatewayError", "RunInAnotherProcess", "ThreadBusy", "ThreadNotFound"]


class GatewayError(Exception):
    """A request the run engine refuses; ``str(error)`` says why, for the caller."""


class ThreadNotFound(GatewayError):
    """The caller named a thread that does not exist (or is being deleted)."""

    def __init__(self, thread_id: str) -> None:
        super().__init__(f"Thread {thread_id} not found")
        self.thread_id = thread_id


class ThreadBusy(GatewayError):
    """The caller asked for a run on a thread that has one, with a strategy that refuses a second
    (``multitask_strategy: reject``)."""

    def __init__(self, thread_id: str, run_id: str) -> None:
        super().__init__(
            f"Thread {thread_id} is busy with run {run_id}; "
            "multitask_strategy 'reject' refuses a second run (use 'enqueue' to wait)."
        )
        self.thread_id = thread_id
        self.run_id = run_id


class RunInAnotherProcess(GatewayError):
    """The caller asked to stop a run that another gateway process runs, and this process has no
    way to reach it (no shared database)."""

    def __init__(self) -> None:
        super().__init__("The run in progress belongs to another gateway process.")
