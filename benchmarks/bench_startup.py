"""What the start-up hook costs every interpreter of an environment it is installed in.

The wheel installs ``deerflow_knowledge_finder.pth``, which runs at each interpreter's start-up,
whatever that interpreter is for. Fresh venvs of the same interpreter, one without the hook and
one with it (the ``.pth`` and its module, as the wheel lays them out, byte-compiled as an
installer or the first import leaves them), each run ``python -c pass`` in turn, interleaved;
the medians are compared. CPU time (user + system of the child) is the figure taken, since on a
shared machine wall time mostly measures the neighbours. Target: a ratio of at most 1.05, and no
module loaded at start-up but the hook's own. A third venv holds the hook without its bytecode
and may not write it (``PYTHONDONTWRITEBYTECODE``): the hook is compiled at every start-up there,
a cost shown but not targeted.

``--finder PATH`` measures another copy of the hook's module (an older one, say).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROUNDS = 60
BACKEND = Path(__file__).resolve().parents[1] / "backend"
TARGET = 1.05


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _seconds(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``command``."""
    cpu, start = _children_cpu(), time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start, _children_cpu() - cpu


def _venv(path: Path, finder: Path | None = None, *, bytecode: bool = True) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    if finder is not None:
        (site,) = path.glob("lib/python*/site-packages")
        shutil.copy(finder, site / "_deerflow_knowledge_finder.py")
        shutil.copy(BACKEND / "deerflow_knowledge_finder.pth", site)
        if bytecode:
            module = str(site / "_deerflow_knowledge_finder.py")
            subprocess.run([str(python), "-m", "compileall", "-q", module], check=True)
    return python


def _modules(python: Path) -> set[str]:
    code = "import sys; print('\\n'.join(sys.modules))"
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finder", type=Path, default=BACKEND / "_deerflow_knowledge_finder.py")
    finder = parser.parse_args().finder
    writing = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    runs = {
        "bare": writing,
        "hooked": writing,
        "source": {**writing, "PYTHONDONTWRITEBYTECODE": "1"},
    }
    wall: dict[str, list[float]] = {name: [] for name in runs}
    cpu: dict[str, list[float]] = {name: [] for name in runs}
    with tempfile.TemporaryDirectory() as work:
        pythons = {
            "bare": _venv(Path(work) / "bare"),
            "hooked": _venv(Path(work) / "hooked", finder),
            "source": _venv(Path(work) / "source", finder, bytecode=False),
        }
        added = sorted(_modules(pythons["hooked"]) - _modules(pythons["bare"]))
        for _ in range(ROUNDS):
            for name, env in runs.items():
                elapsed, used = _seconds([str(pythons[name]), "-c", "pass"], env)
                wall[name].append(elapsed)
                cpu[name].append(used)
    labels = {"bare": "no hook", "hooked": "the hook", "source": "the hook, no bytecode"}
    for name, label in labels.items():
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(f"python -c pass, {label + ':':<22} wall {w * 1e3:6.1f} ms   CPU {c * 1e3:6.1f} ms")
    print(f"modules loaded at start-up by the hook: {len(added)} ({', '.join(added)})")
    source = statistics.median(cpu["source"]) / statistics.median(cpu["bare"])
    print(f"start-up with the hook but no bytecode / without (CPU): {source:.3f}")
    ratio = statistics.median(cpu["hooked"]) / statistics.median(cpu["bare"])
    print(f"start-up with/without the hook ratio (CPU, target <= {TARGET}): {ratio:.3f}")


if __name__ == "__main__":
    main()
