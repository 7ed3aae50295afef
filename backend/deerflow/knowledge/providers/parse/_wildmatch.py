"""Git's ``.gitignore`` pattern matching, rebuilt so that one check costs work linear in the
path's length times the patterns' length, whatever the patterns say.

An indexed folder is often a cloned repository, so its ``.gitignore`` files are untrusted input.
Translating patterns to backtracking regular expressions (what ``pathspec`` does) lets one line
such as ``*a*a*a*a*a*a*a*a*a*a*a*a*b`` take time polynomial in a name's length, with the degree
set by the number of stars; git's own ``wildmatch`` prunes its backtracking differently. Here a
line is parsed the way git parses it (``dir.c``: comments, trailing spaces, ``!``, a trailing
``/``, a leading ``/``, basename-only lines) and its wildcards (``wildmatch.c``: ``?``, ``*``,
``**`` in all its positions, bracket expressions with ranges, ``!``/``^`` and POSIX classes, and
backslash escapes) become the positions of a nondeterministic automaton. All the patterns of one
file are one automaton, run over the path as a DFA built lazily and cached within a fixed budget
(as RE2 runs its automata): each byte is one cached transition or one step over at most every
position. Matching is on bytes, as git's is, and case-sensitive (git's default on Linux and in a
fresh repository). Git itself is the oracle of the tests.

Pure: bytes and strings in, pattern indices out. Covered, with git as the oracle, by
tests/test_providers_parse_ignore.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_CACHED_STATES", "Pattern", "PatternSet", "parse_line", "split_lines"]

#: How many positions and transitions an automaton keeps cached before it starts afresh. It bounds
#: the memory of one file's patterns; the work per byte stays bounded by the patterns' size.
MAX_CACHED_STATES: Final = 1 << 16

_SLASH: Final = 0x2F
_BACKSLASH: Final = 0x5C
_ALL: Final = (1 << 256) - 1
_NOT_SLASH: Final = _ALL & ~(1 << _SLASH)
_BOM: Final = b"\xef\xbb\xbf"

# What each position of an automaton does with the next byte.
_CONSUME: Final = 0  # one byte of its set, then the next position
_STAR: Final = 1  # any bytes but "/" (a "*", or a "**" that git reads as "*")
_DOUBLE_STAR: Final = 2  # any bytes (a "**" between slashes or at an end)
_SKIP_FOLDERS: Final = 3  # before the "**" of a "**/": on to it, or past its "/" (no folder)
_ACCEPT: Final = 4  # the end of one pattern


def _byte_set(members: Iterable[int]) -> int:
    mask = 0
    for member in members:
        mask |= 1 << member
    return mask


def _span(low: int, high: int) -> int:
    return _byte_set(range(low, high + 1))


_ALPHA: Final = _span(0x41, 0x5A) | _span(0x61, 0x7A)
_DIGIT: Final = _span(0x30, 0x39)
# Git's own ASCII ctype (sane-ctype.h), not the C library's: "space" is tab, newline, carriage
# return and space, without vertical tab or form feed; no byte above 0x7f is in any class.
_CLASSES: Final = {
    b"alnum": _ALPHA | _DIGIT,
    b"alpha": _ALPHA,
    b"blank": _byte_set((0x09, 0x20)),
    b"cntrl": _span(0x00, 0x1F) | _byte_set((0x7F,)),
    b"digit": _DIGIT,
    b"graph": _span(0x21, 0x7E),
    b"lower": _span(0x61, 0x7A),
    b"print": _span(0x20, 0x7E),
    b"punct": _span(0x21, 0x7E) & ~(_ALPHA | _DIGIT),
    b"space": _byte_set((0x09, 0x0A, 0x0D, 0x20)),
    b"upper": _span(0x41, 0x5A),
    b"xdigit": _DIGIT | _span(0x41, 0x46) | _span(0x61, 0x66),
}

_Token = tuple[int, int]
"""A position's kind and the set of bytes it takes (a 256-bit mask)."""


@dataclass(frozen=True, slots=True)
class Pattern:
    """One line of a ``.gitignore`` as git reads it."""

    line: str
    """The line as written (trailing spaces and a carriage return removed), to name it."""
    negative: bool
    """``!pattern``: a match takes the path back."""
    directory_only: bool
    """``pattern/``: matches folders only."""
    basename_only: bool
    """No ``/`` but a trailing one: matched against the last component of the path."""
    tokens: tuple[_Token, ...] | None
    """What the automaton runs; None for a pattern that can never match (git's wildmatch gives
    up on an unterminated bracket, an unknown ``[:class:]`` or a trailing backslash)."""


def split_lines(data: bytes) -> list[bytes]:
    """The lines of a ``.gitignore`` as git splits them: a UTF-8 byte order mark skipped, lines
    ended by ``\\n`` only (one ``\\r`` before it dropped); no other byte ends a line."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    return [line[:-1] if line.endswith(b"\r") else line for line in data.split(b"\n")]


def parse_line(line: bytes) -> Pattern | None:
    """The pattern on one line, or None for a blank line or a comment (``#`` first)."""
    if not line or line.startswith(b"#"):
        return None
    line = _trim_trailing_spaces(line.split(b"\x00", 1)[0])  # git reads the line as a C string
    shown = line.decode("utf-8", "replace")
    negative = line.startswith(b"!")
    body = line[1:] if negative else line
    directory_only = body.endswith(b"/")
    if directory_only:
        body = body[:-1]
    if not body:
        return None  # matches nothing: git keeps it, to the same effect
    basename_only = b"/" not in body
    if not basename_only and body.startswith(b"/"):
        body = body[1:]  # anchored: relative to the .gitignore's folder, which it always is here
    return Pattern(shown, negative, directory_only, basename_only, _tokens(body))


def _trim_trailing_spaces(line: bytes) -> bytes:
    """Git's ``trim_trailing_spaces``: unescaped trailing spaces go (a backslash keeps the byte
    after it; a line ending in a lone backslash is kept whole)."""
    last_space = None
    i = 0
    while i < len(line):
        byte = line[i]
        if byte == 0x20:
            if last_space is None:
                last_space = i
        elif byte == _BACKSLASH:
            i += 1
            if i == len(line):
                return line
            last_space = None
        else:
            last_space = None
        i += 1
    return line if last_space is None else line[:last_space]


def _tokens(pattern: bytes) -> tuple[_Token, ...] | None:
    """The positions of one pattern, read as ``wildmatch`` reads it with ``WM_PATHNAME``."""
    tokens: list[_Token] = []
    end = len(pattern)
    i = 0
    while i < end:
        byte = pattern[i]
        if byte == _BACKSLASH:
            if i + 1 == end:
                return None
            tokens.append((_CONSUME, 1 << pattern[i + 1]))
            i += 2
        elif byte == 0x3F:  # ?
            tokens.append((_CONSUME, _NOT_SLASH))
            i += 1
        elif byte == 0x2A:  # *
            j = i + 1
            if j < end and pattern[j] == 0x2A:
                while j < end and pattern[j] == 0x2A:
                    j += 1
                after = pattern[j : j + 2]
                whole = (i == 0 or pattern[i - 1] == _SLASH) and (
                    j == end or after[:1] == b"/" or after == b"\\/"
                )
                if not whole:
                    tokens.append((_STAR, _NOT_SLASH))
                elif after[:1] == b"/":
                    # Git tries "no folder" only where the "**" starts, never once it has
                    # matched something: a position of its own, before the star.
                    tokens.append((_SKIP_FOLDERS, 0))
                    tokens.append((_DOUBLE_STAR, _ALL))
                else:
                    tokens.append((_DOUBLE_STAR, _ALL))
            else:
                tokens.append((_STAR, _NOT_SLASH))
            i = j
        elif byte == 0x5B:  # [
            bracket = _bracket(pattern, i)
            if bracket is None:
                return None
            mask, i = bracket
            tokens.append((_CONSUME, mask & _NOT_SLASH))
        else:
            tokens.append((_CONSUME, 1 << byte))
            i += 1
    return tuple(tokens)


def _bracket(pattern: bytes, start: int) -> tuple[int, int] | None:
    """The bytes a bracket expression at ``start`` takes and where it ends, or None if
    ``wildmatch`` gives up on it. Its quirks are git's: ``]`` first is a member, ``-`` is a
    range only between two members, ``[:name:]`` names a class and a ``[:`` without ``:]`` is
    the member ``[``."""

    def at(k: int) -> int:
        return pattern[k] if k < len(pattern) else 0

    j = start + 1
    byte = at(j)
    if byte == 0x5E:  # ^ is ! here
        byte = 0x21
    negated = byte == 0x21
    if negated:
        j += 1
        byte = at(j)
    previous = 0
    mask = 0
    while True:
        if byte == 0:
            return None
        if byte == _BACKSLASH:
            j += 1
            byte = at(j)
            if byte == 0:
                return None
            mask |= 1 << byte
        elif byte == 0x2D and previous and at(j + 1) not in (0, 0x5D):  # a range
            j += 1
            byte = at(j)
            if byte == _BACKSLASH:
                j += 1
                byte = at(j)
                if byte == 0:
                    return None
            if previous <= byte:
                mask |= _span(previous, byte)
            byte = 0  # a range is no start of another
        elif byte == 0x5B and at(j + 1) == 0x3A:  # [:
            name_start = j + 2
            k = name_start
            while k < len(pattern) and pattern[k] != 0x5D:
                k += 1
            if k == len(pattern):
                return None
            if k - name_start - 1 < 0 or pattern[k - 1] != 0x3A:
                j = name_start - 2  # not a class: "[" is a member, and reading goes on after it
                byte = 0x5B
                mask |= 1 << byte
            else:
                members = _CLASSES.get(pattern[name_start : k - 1])
                if members is None:
                    return None
                mask |= members
                byte = 0
                j = k
        else:
            mask |= 1 << byte
        previous = byte
        j += 1
        byte = at(j)
        if byte == 0x5D:
            break
    return (_ALL & ~mask if negated else mask), j + 1


class _Automaton:
    """The union of some patterns as one automaton; :meth:`matches` runs it over a text.

    Its states are sets of positions, built when first reached and cached with their
    transitions: a transition counts one entry, a new state one per position, and a step that
    would take the cache past ``max_cached`` entries starts it afresh. A cached byte
    costs one lookup, a new one at most one visit of each position, so a text of n bytes costs
    O(n * positions) whatever the patterns. ``steps`` counts that work, for the tests.
    """

    __slots__ = (
        "_accepts",
        "_cached",
        "_kinds",
        "_masks",
        "_max",
        "_next",
        "_owners",
        "_start",
        "_states",
        "steps",
    )

    def __init__(self, patterns: Sequence[tuple[int, tuple[_Token, ...]]], max_cached: int):
        kinds: list[int] = []
        masks: list[int] = []
        owners: list[int] = []
        starts: list[int] = []
        for index, tokens in patterns:
            starts.append(len(kinds))
            for kind, mask in tokens:
                kinds.append(kind)
                masks.append(mask)
                owners.append(-1)
            kinds.append(_ACCEPT)
            masks.append(0)
            owners.append(index)
        self._kinds = tuple(kinds)
        self._masks = tuple(masks)
        self._owners = tuple(owners)
        self._max = max_cached
        self.steps = 0
        self._next: dict[tuple[frozenset[int], int], frozenset[int]] = {}
        self._states: dict[frozenset[int], frozenset[int]] = {}
        self._accepts: dict[frozenset[int], tuple[int, ...]] = {}
        self._cached = 0
        self._start = self._closure(starts)

    def _closure(self, positions: Iterable[int]) -> frozenset[int]:
        """The positions and every one reachable from them without reading a byte."""
        kinds = self._kinds
        seen: set[int] = set()
        pending = list(positions)
        while pending:
            position = pending.pop()
            if position in seen:
                continue
            seen.add(position)
            self.steps += 1
            kind = kinds[position]
            if kind in (_STAR, _DOUBLE_STAR):
                pending.append(position + 1)  # the star matches nothing more
            elif kind == _SKIP_FOLDERS:
                pending.append(position + 1)
                pending.append(position + 3)  # past the "**" and its "/"
        return frozenset(seen)

    def _step(self, state: frozenset[int], byte: int) -> frozenset[int]:
        kinds = self._kinds
        masks = self._masks
        reached = []
        for position in state:
            self.steps += 1
            kind = kinds[position]
            if masks[position] >> byte & 1:  # 0 for _SKIP_FOLDERS and _ACCEPT
                reached.append(position + 1 if kind == _CONSUME else position)
        following = self._closure(reached)
        known = self._states.get(following)
        cost = 1 if known is not None else 1 + len(following)  # the transition, a new state
        if self._cached + cost > self._max:
            self._next.clear()
            self._states.clear()
            self._accepts.clear()
            self._cached = 0
            known = None
            cost = 1 + len(following)
        if known is None:
            self._states[following] = known = following
        self._next[(state, byte)] = known
        self._cached += cost
        return known

    def matches(self, text: bytes) -> tuple[int, ...]:
        """The indices of the patterns that match the whole of ``text``."""
        state = self._start
        if not state:
            return ()  # no patterns
        cached = self._next
        for byte in text:
            self.steps += 1
            following = cached.get((state, byte))
            state = self._step(state, byte) if following is None else following
            if not state:
                return ()
        accepts = self._accepts.get(state)
        if accepts is None:
            owners = self._owners
            accepts = tuple(owners[p] for p in state if self._kinds[p] == _ACCEPT)
            self._accepts[state] = accepts
        return accepts


class PatternSet:
    """The patterns of one ``.gitignore`` (or one list of exclude patterns), in order."""

    __slots__ = ("_by_name", "_by_path", "patterns")

    def __init__(
        self, patterns: Sequence[Pattern], *, max_cached_states: int = MAX_CACHED_STATES
    ) -> None:
        self.patterns = tuple(patterns)
        by_name: list[tuple[int, tuple[_Token, ...]]] = []
        by_path: list[tuple[int, tuple[_Token, ...]]] = []
        for index, pattern in enumerate(self.patterns):
            if pattern.tokens is not None:
                (by_name if pattern.basename_only else by_path).append((index, pattern.tokens))
        self._by_name = _Automaton(by_name, max_cached_states)
        self._by_path = _Automaton(by_path, max_cached_states)

    @property
    def steps(self) -> int:
        """The work done so far (positions visited and bytes read), for the tests."""
        return self._by_name.steps + self._by_path.steps

    def last_match(self, path: bytes, *, folder: bool) -> int | None:
        """The index of the last pattern that matches ``path`` (relative to the patterns'
        folder, no trailing ``/``), or None. As in git, the last match decides."""
        basename = path[path.rfind(b"/") + 1 :]
        best = -1
        for matches in (self._by_name.matches(basename), self._by_path.matches(path)):
            for index in matches:
                if index > best and (folder or not self.patterns[index].directory_only):
                    best = index
        return None if best < 0 else best
