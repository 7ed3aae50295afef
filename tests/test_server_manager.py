"""Finished runs kept in memory for replays: bounded by count and by bytes (manager.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from deerflow.knowledge.server.manager import (
    FINISHED_RUN_BYTES_KEPT,
    FINISHED_RUNS_KEPT,
    RunManager,
    runs_to_forget,
)
from deerflow.knowledge.server.streaming import RunStream


def test_the_count_bound_drops_the_oldest() -> None:
    finished = [(f"r{i}", 1) for i in range(5)]
    assert runs_to_forget(finished, most=3, most_bytes=100) == ["r0", "r1"]
    assert runs_to_forget(finished, most=5, most_bytes=100) == []


def test_the_byte_bound_at_exactly_the_limit_and_one_past() -> None:
    finished = [("old", 10), ("mid", 10), ("new", 10)]
    assert runs_to_forget(finished, most=10, most_bytes=30) == []
    assert runs_to_forget(finished, most=10, most_bytes=29) == ["old"]


def test_the_newest_run_stays_whatever_its_size() -> None:
    assert runs_to_forget([("a", 5), ("huge", 10**9)], most=10, most_bytes=100) == ["a"]


@given(
    sizes=st.lists(st.integers(min_value=0, max_value=50), max_size=30),
    most=st.integers(min_value=1, max_value=30),
    most_bytes=st.integers(min_value=0, max_value=500),
)
def test_the_oldest_go_and_one_more_would_not_fit(
    sizes: list[int], most: int, most_bytes: int
) -> None:
    finished = [(f"r{i}", size) for i, size in enumerate(sizes)]
    dropped = runs_to_forget(finished, most=most, most_bytes=most_bytes)
    kept = finished[len(dropped) :]
    assert dropped == [run_id for run_id, _ in finished[: len(dropped)]]  # the oldest, in order
    assert len(kept) <= most
    if len(kept) > 1:
        assert sum(size for _, size in kept) <= most_bytes
    if dropped:  # keeping the next-oldest too would break a bound
        one_more = finished[len(dropped) - 1 :]
        assert len(one_more) > most or sum(size for _, size in one_more) > most_bytes


def test_a_manager_holds_finished_runs_within_its_byte_bound() -> None:
    manager = RunManager(None, None, finished_run_bytes_kept=2_500)  # type: ignore[arg-type]
    for n in range(5):
        stream = RunStream(f"run-{n}", "thread", resumable=False)
        stream.emit("values", b"x" * 1_000)
        stream.finish()
        manager.streams[stream.run_id] = stream
    running = RunStream("running", "thread", resumable=False)
    running.emit("values", b"y" * 10_000)
    manager.streams["running"] = running
    manager._forget_old()
    assert list(manager.streams) == ["run-3", "run-4", "running"]  # a running run is never dropped
    assert manager.streams["run-4"].size == 1_000


def test_the_defaults() -> None:
    manager = RunManager(None, None)  # type: ignore[arg-type]
    assert (manager.finished_runs_kept, manager.finished_run_bytes_kept) == (
        FINISHED_RUNS_KEPT,
        FINISHED_RUN_BYTES_KEPT,
    )
