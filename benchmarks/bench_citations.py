"""find_citations on realistic answers and hostile inputs from 1 KB to 10 MB.

For each input the finder is timed at 1 KB, 10 KB, ..., 10 MB. The growth t(10n)/t(n) is taken
from 100 KB up (below that, fixed costs dominate): each step is printed, and the growth that
counts is their geometric mean, (t(10 MB)/t(100 KB))^(1/2), which must stay at or under 11 for
linear time (a single step moves by about 15 % on a busy machine). The baseline is one compiled
regular-expression pass over the same text (``finditer`` of an inline-link pattern): the least
any scanner must do. Each ratio is measured in this one run; timings are CPU time, the fastest
of a few rounds, and only ratios mean anything. Printed last: the worst mean growth, then the
finder/regex ratio on the 10 MB realistic answer.
"""

from __future__ import annotations

import gc
import itertools
import re
import time
from collections.abc import Callable

from deerflow.knowledge import find_citations

H = "0123456789abcdef0123456789abcdef"
LINK = f"[citation:Guide](#knowledge-source-{H})"
SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
BASELINE = re.compile(r"\[[^\]\n]*\]\([^)\s]*\)")

_ANSWER = (
    "Deer eat acorns in autumn " + LINK + " and browse twigs in *winter*.\n\n"
    "- Fawns stay hidden for weeks [citation:Notes][1].\n"
    "- A `code span` with [not a link](#x) inside.\n\n"
    "```\n[citation:X](#knowledge-source-" + H + ")\n```\n\n"
    "[1]: #knowledge-source-" + H + "\n\n"
)

INPUTS: dict[str, Callable[[int], str]] = {
    "realistic answer": lambda n: (_ANSWER * (n // len(_ANSWER) + 1))[:n],
    "[ x n/2 then links": lambda n: "[" * (n // 2) + LINK * (n // 2 // len(LINK)),
    "images then links": lambda n: "![x](y)" * (n // 14) + "[x](y)" * (n // 12),
    "nested brackets": lambda n: "[" * (n // 60) + "a" + f"](#knowledge-source-{H})" * (n // 60),
    "]( x n": lambda n: "](" * (n // 2),
    "backslashes": lambda n: "\\" * n,
    "a*** x n/4": lambda n: "a***" * (n // 4),
    "> x n": lambda n: ">" * n,
}


def _time(fn: Callable[[], object], size: int) -> float:
    """The fastest of a few rounds, in CPU seconds of this process: other processes on a shared
    machine slow a round down, never speed it up. As in ``timeit``, the cyclic garbage collector
    is off while timing (the finder builds no cycles; collections only add noise)."""
    rounds = 7 if size <= 100_000 else 3
    loops = max(1, 100_000 // size)
    samples = []
    for _ in range(rounds):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            for _ in range(loops):
                fn()
            samples.append((time.process_time() - start) / loops)
        finally:
            gc.enable()
    return min(samples)


def main() -> None:
    worst = 0.0
    regex_ratio = 0.0
    for name, make in INPUTS.items():
        times: list[float] = []
        for size in SIZES:
            text = make(size)
            times.append(_time(lambda text=text: find_citations(text), size))
            if size == SIZES[-1]:
                base = _time(lambda text=text: sum(1 for _ in BASELINE.finditer(text)), size)
                ratio = times[-1] / base
                if name == "realistic answer":
                    regex_ratio = ratio
        growth = [later / earlier for earlier, later in itertools.pairwise(times[2:])]
        mean_growth = (times[-1] / times[2]) ** 0.5
        worst = max(worst, mean_growth)
        cells = "  ".join(f"{t * 1e3:9.2f} ms" for t in times)
        steps = ", ".join(f"{g:.1f}" for g in growth)
        print(
            f"{name:20} {cells}   t(10n)/t(n): {steps} (mean {mean_growth:.1f})"
            f"   vs regex: {ratio:.0f}x"
        )
    print(f"sizes: {', '.join(f'{s:,}' for s in SIZES)} characters")
    print(f"worst mean growth t(10n)/t(n), 100 KB to 10 MB, target <= 11: {worst:.2f}")
    print(f"find_citations/regex pass ratio, 10 MB realistic answer: {regex_ratio:.1f}")


if __name__ == "__main__":
    main()
