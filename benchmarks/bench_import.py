"""Import cost of ``deerflow.knowledge`` and of the CLI against ``import pydantic, httpx``.

Each figure is a fresh interpreter (``python -c``), so it is what a user pays per process. The
commands are run interleaved in the same run and the medians compared; the interpreter's own
start-up (``python -c pass``) is subtracted from the import figures. Each is measured as wall
time and as CPU time (user + system of the child): on a shared machine the wall time mostly
measures the neighbours, so the ratio is taken on CPU time. Targets: the package import at most
2x the baseline; ``deerflow-knowledge --help`` under 1 s.
"""

from __future__ import annotations

import resource
import statistics
import subprocess
import sys
import time

ROUNDS = 15
COMMANDS: dict[str, list[str]] = {
    "startup": [sys.executable, "-c", "pass"],
    "baseline": [sys.executable, "-c", "import pydantic, httpx"],
    "package": [sys.executable, "-c", "import deerflow.knowledge"],
    "help": [sys.executable, "-m", "deerflow.knowledge.cli", "--help"],
}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _seconds(command: list[str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``command``."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu


def main() -> None:
    wall: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpu: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(ROUNDS):
        for name, command in COMMANDS.items():
            elapsed, used = _seconds(command)
            wall[name].append(elapsed)
            cpu[name].append(used)
    w = {name: statistics.median(values) for name, values in wall.items()}
    c = {name: statistics.median(values) for name, values in cpu.items()}
    rows = (
        ("python -c pass", w["startup"], c["startup"]),
        (
            "import pydantic, httpx (-start-up)",
            w["baseline"] - w["startup"],
            c["baseline"] - c["startup"],
        ),
        (
            "import deerflow.knowledge (-start-up)",
            w["package"] - w["startup"],
            c["package"] - c["startup"],
        ),
        ("deerflow-knowledge --help (target < 1 s)", w["help"], c["help"]),
    )
    for label, wall_s, cpu_s in rows:
        print(f"{label:<42} wall {wall_s * 1e3:6.0f} ms   CPU {cpu_s * 1e3:6.0f} ms")
    ratio = (c["package"] - c["startup"]) / (c["baseline"] - c["startup"])
    print(f"import deerflow.knowledge/baseline ratio (CPU): {ratio:.2f}")


if __name__ == "__main__":
    main()
