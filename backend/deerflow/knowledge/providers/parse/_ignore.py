"""Which paths of an indexed folder are left out by the operator's patterns: ``exclude`` patterns
and the folder's ``.gitignore`` files, both in ``.gitignore`` syntax, matched as git matches them
(:mod:`._wildmatch`, in time linear in the path's length times the patterns').

A project indexed as it is checked out would otherwise pull in ``node_modules``, build output and
vendored copies, whose text then tops the results. The rules follow git's precedence: an exclude
pattern (given for this run) decides before any ``.gitignore``; a deeper ``.gitignore`` decides
before the ones above it; within one list of patterns the last match wins, so ``!pattern``
re-includes. ``build/`` matches only a folder, and a folder left out is never entered, so
nothing below it can be re-included (as in git). Every line is a pattern, as in git: one git's
matcher gives up on (an unterminated ``[``, say) matches nothing. Used by discovery
(:mod:`deerflow.knowledge.providers.documents`). Pure. Tested in
tests/test_providers_parse_ignore.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from deerflow.knowledge.providers.parse._wildmatch import PatternSet, parse_line, split_lines

__all__ = ["MAX_GITIGNORE_BYTES", "Rules", "check_patterns", "parse_patterns"]

#: A ``.gitignore`` larger than this is not read (its rules are not applied, with a reason).
MAX_GITIGNORE_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Patterns:
    base: str
    """The folder the patterns are relative to ("" for the indexed folder), with a final ``/``."""
    origin: str
    """Where they come from, for the reason: ``exclude`` or a ``.gitignore``'s path."""
    spec: PatternSet


def _encoded(text: str) -> bytes:
    """A path or pattern as the bytes git compares (names undecodable as UTF-8 came in as
    surrogate escapes, the file system's encoding here)."""
    return text.encode("utf-8", "surrogateescape")


def parse_patterns(lines: Sequence[str | bytes]) -> PatternSet:
    """The compiled patterns, one per ``.gitignore`` line (comments and blank lines match nothing)."""
    parsed = [parse_line(_encoded(x) if isinstance(x, str) else x) for x in lines]
    return PatternSet([p for p in parsed if p is not None])


def check_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    """The exclude patterns as given, or :class:`ValueError` naming the first invalid one: not a
    string, blank, or holding a NUL byte or a line break (one pattern is one line)."""
    for pattern in patterns:
        if (
            not isinstance(pattern, str)
            or not pattern.strip()
            or any(c in pattern for c in "\x00\n")
        ):
            raise ValueError(f"invalid exclude pattern {pattern!r}")
    return tuple(patterns)


@dataclass(frozen=True, slots=True)
class Rules:
    """The patterns in force in one folder: the exclude patterns, then its ``.gitignore`` files
    from the deepest up."""

    layers: tuple[_Patterns, ...] = ()

    @classmethod
    def from_exclude(cls, patterns: Sequence[str]) -> Rules:
        if not patterns:
            return cls()
        return cls((_Patterns("", "exclude", parse_patterns(patterns)),))

    def with_gitignore(self, folder: str, text: str | bytes) -> Rules:
        """These rules and a ``.gitignore`` found in ``folder`` (``""`` or ``"a/b/"``), read as
        git reads it: bytes, lines ended by ``\\n``."""
        data = _encoded(text) if isinstance(text, str) else text
        layer = _Patterns(folder, f"{folder}.gitignore", parse_patterns(split_lines(data)))
        exclude = [p for p in self.layers if p.origin == "exclude"]
        ignores = [p for p in self.layers if p.origin != "exclude"]
        return Rules((*exclude, layer, *ignores))

    def reason(self, path: str, *, folder: bool) -> str | None:
        """Why ``path`` (relative to the indexed folder) is left out, or None if it is not."""
        for layer in self.layers:
            if not path.startswith(layer.base):
                continue
            index = layer.spec.last_match(_encoded(path[len(layer.base) :]), folder=folder)
            if index is None:
                continue
            pattern = layer.spec.patterns[index]
            if pattern.negative:
                return None  # re-included by a "!" pattern
            if layer.origin == "exclude":
                return f"excluded by the pattern {pattern.line.strip()!r}"
            return f"ignored by {layer.origin} ({pattern.line.strip()!r})"
        return None
