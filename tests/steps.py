"""Counted work for the linear-time tests: Python line events executed, never wall time."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any


def line_steps(run: Callable[[], object], *, in_file: Callable[[str], bool]) -> int:
    """Python line events executed in the files ``in_file`` accepts while ``run()`` runs."""
    count = 0

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        nonlocal count
        if not in_file(frame.f_code.co_filename):
            return None
        if event == "line":
            count += 1
        return tracer

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return count
