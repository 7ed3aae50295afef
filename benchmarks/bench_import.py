"""Import cost of ``deerflow.knowledge`` and of the CLI against ``import pydantic, httpx``.

Each figure is a fresh interpreter (``python -c``), so it is what a user pays per process. The
three commands are run interleaved in the same run and the medians compared; the interpreter's
own start-up (``python -c pass``) is subtracted from the import figures. Targets: the package
import at most 2x the baseline; ``deerflow-knowledge --help`` under 1 s in absolute terms.
Machines are noisy; only the ratio means anything.
"""

from __future__ import annotations

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


def _seconds(command: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    timings: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(ROUNDS):
        for name, command in COMMANDS.items():
            timings[name].append(_seconds(command))
    median = {name: statistics.median(values) for name, values in timings.items()}
    startup = median["startup"]
    base = median["baseline"] - startup
    ours = median["package"] - startup
    print(f"python -c pass:                   {startup * 1e3:.0f} ms")
    print(f"import pydantic, httpx:           {base * 1e3:.0f} ms (start-up subtracted)")
    print(f"import deerflow.knowledge:        {ours * 1e3:.0f} ms (start-up subtracted)")
    print(f"deerflow-knowledge --help:        {median['help'] * 1e3:.0f} ms (target < 1000)")
    print(f"import deerflow.knowledge/baseline ratio: {ours / base:.2f}")


if __name__ == "__main__":
    main()
