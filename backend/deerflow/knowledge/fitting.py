"""Evidence is laid out whole or not at all: the one rule every budget with entries follows
(docs/RATIONALE.md#budgets-and-fitting).

An excerpt cut short under a live citation handle would make a chip show text the model never
saw, so every writer that fits entries into a character budget — the shared formatter's hits
(``formatting.format_result``), a ``task`` report's evidence appendix
(``forwarding.forward_cited_sources``) and a native RAGFlow message re-rendered by the tool-output
budget (``budget.budget_native``) — asks :class:`WholeEntries` whether the next entry fits
entirely. One that does not is skipped whole and a later, smaller one may still fit.

Pure: plain values in, plain values out.
"""

from __future__ import annotations

__all__ = ["WholeEntries"]


class WholeEntries:
    """Room for whole entries in ``budget`` characters (code points).

    ``used`` is what is already laid out (a header, a synopsis); ``separator`` is written between
    two pieces, so it costs nothing before the first one. :meth:`take` either places an entry
    entirely or skips it; it never places part of one.
    """

    __slots__ = ("_started", "budget", "separator", "skipped", "taken", "used")

    def __init__(self, budget: int, *, used: int = 0, separator: str = "") -> None:
        if used < 0:
            raise ValueError("used must not be negative")
        self.budget = budget
        self.used = used
        self.separator = separator
        self.taken = 0
        self.skipped = 0
        self._started = used > 0  # a piece is already laid out: the next one pays the separator

    def cost(self, entry: str) -> int:
        """What placing ``entry`` next would use, separator included."""
        return len(entry) + (len(self.separator) if self._started else 0)

    def fits(self, entry: str) -> bool:
        return self.used + self.cost(entry) <= self.budget

    def take(self, entry: str) -> bool:
        """Place ``entry`` if it fits whole (True); otherwise count it as skipped (False)."""
        if not self.fits(entry):
            self.skipped += 1
            return False
        self.used += self.cost(entry)
        self.taken += 1
        self._started = True
        return True
