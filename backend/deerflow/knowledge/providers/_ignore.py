"""Which paths of an indexed folder are left out by the operator's patterns: ``exclude`` patterns
and the folder's ``.gitignore`` files, both in ``.gitignore`` syntax (as :mod:`pathspec` reads it).

A project indexed as it is checked out would otherwise pull in ``node_modules``, build output and
vendored copies, whose text then tops the results. The rules follow git's precedence: an exclude
pattern (given for this run) decides before any ``.gitignore``; a deeper ``.gitignore`` decides
before the ones above it; within one list of patterns the last match wins, so ``!pattern``
re-includes. Folders are matched with a trailing ``/`` (``build/`` matches only a folder), and a
folder left out is never entered, so nothing below it can be re-included (as in git).
Used by discovery (:mod:`deerflow.knowledge.providers.documents`); pure apart from nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from pathspec import GitIgnoreSpec

__all__ = ["MAX_GITIGNORE_BYTES", "Rules", "check_patterns", "parse_patterns"]

#: A ``.gitignore`` larger than this is not read (its rules are not applied, with a reason).
MAX_GITIGNORE_BYTES: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class _Patterns:
    base: str
    """The folder the patterns are relative to ("" for the indexed folder), with a final ``/``."""
    origin: str
    """Where they come from, for the reason: ``exclude`` or a ``.gitignore``'s path."""
    lines: tuple[str, ...]
    spec: GitIgnoreSpec


def parse_patterns(lines: Sequence[str]) -> GitIgnoreSpec:
    """The compiled patterns; :class:`ValueError` for one that is not valid ``.gitignore`` syntax."""
    try:
        return GitIgnoreSpec.from_lines(lines)
    except Exception as exc:  # pathspec raises GitWildMatchPatternError (a ValueError) and kin
        raise ValueError(str(exc) or type(exc).__name__) from None


def check_patterns(patterns: Sequence[str]) -> tuple[str, ...]:
    """The exclude patterns as given, or :class:`ValueError` naming the first invalid one."""
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern.strip() or "\x00" in pattern:
            raise ValueError(f"invalid exclude pattern {pattern!r}")
        try:
            parse_patterns([pattern])
        except ValueError as exc:
            raise ValueError(f"invalid exclude pattern {pattern!r} ({exc})") from None
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
        lines = tuple(patterns)
        return cls((_Patterns("", "exclude", lines, parse_patterns(lines)),))

    def with_gitignore(self, folder: str, text: str) -> Rules:
        """These rules and a ``.gitignore`` found in ``folder`` (``""`` or ``"a/b/"``).

        A line that is not a valid pattern is ignored, as git does."""
        lines = tuple(text.splitlines())
        kept = []
        for line in lines:
            try:
                parse_patterns([line])
            except ValueError:
                continue
            kept.append(line)
        layer = _Patterns(folder, f"{folder}.gitignore", tuple(kept), parse_patterns(kept))
        exclude = [p for p in self.layers if p.origin == "exclude"]
        ignores = [p for p in self.layers if p.origin != "exclude"]
        return Rules((*exclude, layer, *ignores))

    def reason(self, path: str, *, folder: bool) -> str | None:
        """Why ``path`` (relative to the indexed folder) is left out, or None if it is not."""
        for layer in self.layers:
            if not path.startswith(layer.base):
                continue
            relative = path[len(layer.base) :] + ("/" if folder else "")
            result = layer.spec.check_file(relative)
            if result.include is None:
                continue
            if not result.include:
                return None  # re-included by a "!" pattern
            pattern = layer.lines[result.index] if result.index is not None else "?"
            if layer.origin == "exclude":
                return f"excluded by the pattern {pattern.strip()!r}"
            return f"ignored by {layer.origin} ({pattern.strip()!r})"
        return None
