"""SourceAccumulator cost per ``values`` frame: a 10,000-message history against a 100-message one.

Each frame appends one message (alternately an AI step and a tool message with fresh evidence) and
feeds the whole list, as a child run's ``values`` stream does. The accumulator only examines the
changed suffix, so the per-frame cost should not depend on the history's length. Both sizes are
timed in the same run, interleaved frame by frame; the ratio of the medians is printed last (target <= 1.5).
A full rescan per frame, for scale, would cost about 100x more with the long history.
"""

from __future__ import annotations

import statistics
import time

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

from deerflow.knowledge import KnowledgeSource, build_envelope
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.forwarding import SourceAccumulator

ROUNDS = 31
FRAMES = 60  # per round; stays under the 100-source limit so every tool message is read
LONG, SHORT = 10_000, 100


def _history(size: int) -> list[BaseMessage]:
    messages: list[BaseMessage] = [HumanMessage("Research the petrel colonies.", id="h0")]
    for n in range(1, size):
        if n % 2:
            messages.append(AIMessage("", id=f"ai{n}"))
        else:  # earlier tool output without evidence (e.g. a web page)
            messages.append(
                ToolMessage("Page text " * 20, tool_call_id=f"c{n}", name="fetch", id=f"t{n}")
            )
    return messages


def _new_messages() -> list[BaseMessage]:
    new: list[BaseMessage] = []
    for n in range(FRAMES):
        if n % 2:
            new.append(AIMessage("Searching again.", id=f"new-ai{n}"))
            continue
        source = KnowledgeSource.create(
            provider="lightrag",
            title=f"colony-{n}.md",
            excerpt=f"Colony {n} counted {n * 7} nests.",
        )
        content = f"Source 1: {citation_link(source)}\n{source.excerpt}"
        new.append(
            ToolMessage(
                content,
                artifact=build_envelope([source]),
                tool_call_id=f"new-c{n}",
                name="knowledge_search",
                id=f"new-t{n}",
            )
        )
    return new


def _round(bases: dict[int, list[BaseMessage]], new: list[BaseMessage]) -> dict[int, float]:
    """Mean per-frame seconds for each history size. Frames of both sizes are interleaved one by
    one, in alternating order, so both see the same cache and allocator state."""
    accumulators = {size: SourceAccumulator() for size in bases}
    histories = {size: list(base) for size, base in bases.items()}
    for size, history in histories.items():
        accumulators[size].feed(history)  # the history already seen: not timed
    elapsed = dict.fromkeys(bases, 0.0)
    order = list(histories)
    for message in new:
        order.reverse()  # whoever goes second meets warm caches: take turns
        for size in order:
            history = histories[size]
            accumulator = accumulators[size]
            start = time.perf_counter()
            history.append(message)
            accumulator.feed(history)
            elapsed[size] += time.perf_counter() - start
    for accumulator in accumulators.values():
        assert len(accumulator.sources) == (len(new) + 1) // 2
    return {size: total / len(new) for size, total in elapsed.items()}


def main() -> None:
    bases = {SHORT: _history(SHORT), LONG: _history(LONG)}
    new = _new_messages()
    timings: dict[int, list[float]] = {LONG: [], SHORT: []}
    for _ in range(ROUNDS):
        for size, seconds in _round(bases, new).items():
            timings[size].append(seconds)
    long_ = statistics.median(timings[LONG])
    short = statistics.median(timings[SHORT])
    print(f"accumulator per frame, {SHORT}-message history: {short * 1e6:.1f} µs")
    print(f"accumulator per frame, {LONG}-message history: {long_ * 1e6:.1f} µs")
    print(f"accumulator 10k/100 per-frame ratio: {long_ / short:.2f}")


if __name__ == "__main__":
    main()
