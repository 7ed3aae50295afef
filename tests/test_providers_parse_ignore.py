"""Exclude patterns and .gitignore files: git itself (``git check-ignore``) is the oracle for
which paths a folder's .gitignore files leave out, on fixed trees and on generated ones (patterns
built from every piece of the syntax, names holding the bytes it treats specially); an exclude
pattern decides first; and one check costs work linear in the path times the patterns."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from deerflow.knowledge.providers.documents import discover
from deerflow.knowledge.providers.parse._ignore import Rules, check_patterns, parse_patterns
from deerflow.knowledge.providers.parse._wildmatch import MAX_CACHED_STATES, PatternSet, parse_line

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs git, the reference")
#: Git as the reference and nothing of the machine's own configuration: no global excludes
#: file (read even without a config), case-sensitive as in a fresh repository here.
GIT = ["git", "-c", "core.excludesFile=/dev/null", "-c", "core.ignoreCase=false"]

FILES = (
    "a.md",
    "b.txt",
    "keep.md",
    "build/out.md",
    "build/keep.md",
    "docs/a.md",
    "docs/build/x.md",
    "docs/deep/b.txt",
    "docs/deep/keep.md",
    "node_modules/pkg/README.md",
)
_PATTERN = st.sampled_from(
    [
        "*.txt",
        "build/",
        "/build",
        "build",
        "docs/*",
        "!docs/deep",
        "!keep.md",
        "node_modules",
        "**/deep/",
        "a.md",
        "/a.md",
        "!*.md",
        "# a comment",
        "",
        "docs/**/b.txt",
        "*.md",
    ]
)
_GITIGNORES = st.fixed_dictionaries(
    {"": st.lists(_PATTERN, max_size=4)},
    optional={
        "docs/": st.lists(_PATTERN, max_size=3),
        "docs/deep/": st.lists(_PATTERN, max_size=3),
    },
)


def _tree(root: Path, gitignores: dict[str, list[str]]) -> None:
    for relative in FILES:
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("Herons.", encoding="utf-8")
    for folder, lines in gitignores.items():
        (root / folder / ".gitignore").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _git_ignored(root: Path) -> set[str]:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = subprocess.run(
        [*GIT, "-C", str(root), "check-ignore", "--stdin"],
        input="\n".join(FILES),
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: nothing ignored
    return set(result.stdout.split())


@needs_git
@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(_GITIGNORES)
def test_gitignore_leaves_out_what_git_ignores(
    tmp_path_factory: pytest.TempPathFactory, gitignores: dict[str, list[str]]
) -> None:
    root = tmp_path_factory.mktemp("repo")
    _tree(root, gitignores)
    found, _ = discover(root)
    ignored = _git_ignored(root)
    assert {c.path for c in found} == set(FILES) - ignored


def test_an_exclude_pattern_decides_before_any_gitignore() -> None:
    rules = Rules.from_exclude(["!keep.md", "drafts/"]).with_gitignore("", "*.md\n")
    assert rules.reason("keep.md", folder=False) is None  # taken back by the exclude pattern
    assert rules.reason("other.md", folder=False) == "ignored by .gitignore ('*.md')"
    assert rules.reason("drafts", folder=True) == "excluded by the pattern 'drafts/'"


def test_a_folder_pattern_matches_folders_only() -> None:
    rules = Rules.from_exclude(["build/"])
    assert rules.reason("build", folder=True) == "excluded by the pattern 'build/'"
    assert rules.reason("build", folder=False) is None


def test_a_deeper_gitignore_decides_first_and_applies_below_its_folder_only() -> None:
    rules = Rules().with_gitignore("", "*.md\n").with_gitignore("docs/", "!a.md\n")
    assert rules.reason("docs/a.md", folder=False) is None
    assert rules.reason("a.md", folder=False) == "ignored by .gitignore ('*.md')"
    assert rules.reason("docs/b.md", folder=False) == "ignored by .gitignore ('*.md')"


@pytest.mark.parametrize("bad", ["", "  ", "a\x00b", "a\nb", 7])
def test_invalid_exclude_patterns_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="invalid exclude pattern"):
        check_patterns([bad])  # type: ignore[list-item]


# --------------------------------------------------------------------------- generated trees

#: Bytes of names: plain letters, every byte the syntax gives a meaning, a space, a tab, and a
#: two-byte character (git matches bytes, so "?" takes half of it).
_NAME_CHARS = ["a", "b", "A", "*", "?", "[", "]", "\\", " ", "!", "#", "-", "\t", "é", "1"]
#: Pieces of patterns: literals, wildcards, "**" in its positions, bracket expressions (ranges,
#: negation both ways, "]" first, POSIX classes known and unknown, unterminated), escapes.
_PIECES = [
    "a", "b", "A", "1", "é", "*", "**", "?", "/", "[ab]", "[!a]", "[^a]", "[a-b]", "[]a]",
    "[[:alpha:]]", "[[:space:]]", "[[:digit:][:upper:]]", "[[:punct:]]", "[[:nope:]]",
    "[[:alpha:]", "[\\]]", "[a-]", "[!]", "[b-a]", "[", "]", "\\*", "\\\\", "\\ ", "\\[", "\\",
    " ", "-", "!", "#", "\t", "**/", "/**", "/**/",
]  # fmt: skip


@st.composite
def _patterns(draw: st.DrawFn) -> str:
    body = "".join(draw(st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5)))
    prefix = draw(st.sampled_from(["", "", "", "!", "/", "!/", "#", "\\!", "\\#"]))
    suffix = draw(st.sampled_from(["", "", "", "/", " ", "  ", "\\ ", "/ "]))
    return prefix + body + suffix


@st.composite
def _trees(draw: st.DrawFn) -> tuple[list[str], dict[str, str]]:
    """Paths (folders end with "/") and .gitignore texts by folder."""
    name = st.text(st.sampled_from(_NAME_CHARS), min_size=1, max_size=3)
    paths: list[str] = []
    for parts in draw(st.lists(st.lists(name, min_size=1, max_size=3), min_size=1, max_size=10)):
        folder = ""
        for i, part in enumerate(parts):
            is_folder = i < len(parts) - 1 or draw(st.booleans())
            path = folder + part + ("/" if is_folder else "")
            clash = folder + part + ("" if is_folder else "/")
            if clash in paths:
                break
            if path not in paths:
                paths.append(path)
            folder = path
            if not is_folder:
                break
    folders = ["", *[p for p in paths if p.endswith("/")]]
    chosen = draw(st.lists(st.sampled_from(folders), min_size=1, max_size=3, unique=True))
    texts = {}
    for folder in chosen:
        lines = draw(st.lists(_patterns(), min_size=1, max_size=5))
        texts[folder] = draw(st.sampled_from(["\n", "\r\n"])).join(lines) + "\n"
    return paths, texts


def _lay_out(root: Path, paths: list[str], texts: dict[str, str]) -> None:
    for path in paths:
        target = root / path
        if path.endswith("/"):
            target.mkdir(parents=True, exist_ok=True)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text("Herons.", encoding="utf-8")
    for folder, text in texts.items():
        (root / folder / ".gitignore").write_bytes(text.encode("utf-8"))


def _git_check_ignore(root: Path, paths: list[str]) -> set[str]:
    """What git leaves out, each path asked for by itself (git answers for a path below an
    ignored folder too)."""
    subprocess.run(["git", "init", "-q", "--template=", str(root)], check=True)
    asked = [p.rstrip("/") for p in paths]
    result = subprocess.run(
        [*GIT, "-C", str(root), "check-ignore", "--no-index", "-z", "--stdin"],
        input=b"\0".join(os.fsencode(p) for p in asked) + b"\0",
        capture_output=True,
        check=False,
    )
    assert result.returncode in (0, 1), result.stderr  # 1: nothing ignored
    return {os.fsdecode(p) for p in result.stdout.split(b"\0") if p}


def _ours(root: Path, paths: list[str]) -> set[str]:
    """What the rules leave out, walking as discovery does: a folder's .gitignore applies below
    it, and nothing below a folder left out is looked at (so all of it is left out)."""
    ignored: set[str] = set()

    def walk(folder: str, rules: Rules) -> None:
        gitignore = root / folder / ".gitignore"
        if gitignore.is_file():
            rules = rules.with_gitignore(folder, gitignore.read_bytes())
        children = [p for p in paths if p.startswith(folder) and p != folder]
        for path in children:
            name = path[len(folder) :].rstrip("/")
            if "/" in name:
                continue
            if rules.reason(path.rstrip("/"), folder=path.endswith("/")) is not None:
                ignored.update(p.rstrip("/") for p in paths if p.startswith(path))
            elif path.endswith("/"):
                walk(path, rules)

    walk("", Rules())
    return ignored


@needs_git
@settings(
    max_examples=80,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(_trees())
def test_generated_gitignores_leave_out_what_git_leaves_out(
    tmp_path_factory: pytest.TempPathFactory, tree: tuple[list[str], dict[str, str]]
) -> None:
    paths, texts = tree
    root = tmp_path_factory.mktemp("repo")
    _lay_out(root, paths, texts)
    assert _ours(root, paths) == _git_check_ignore(root, paths)


@needs_git
@pytest.mark.parametrize(
    ("line", "path", "folder"),
    [
        ("[[:alpha:]]", "b", False),  # POSIX classes
        ("[[:space:]]x", "\tx", False),
        ("[[:space:]]x", "\x0bx", False),  # git's "space" has no vertical tab
        ("[!a][!a]", "b", False),  # two bytes wanted, one given
        ("?", "é", False),  # "?" is one byte, "é" two
        ("??", "é", False),
        ("a/**/b", "a/b", False),  # "**/" can match no folder
        ("a/**/b", "a/x/y/b", False),
        ("a/**b", "a/x/b", False),  # "**" not between slashes is "*"
        ("**/b", "x/yb", False),  # no folder only where "**/" starts
        ("a\\ ", "a ", False),  # an escaped trailing space stays
        ("a ", "a", False),
        ("[a", "[a", False),  # an unterminated bracket never matches
        ("x[[:nope:]]", "xn", False),
        ("b\\", "b\\", False),  # nor does a trailing backslash
        ("build/", "build", True),
        ("build/", "build", False),
        ("/a/b", "a/b", False),
        ("a*", "x/ab", False),  # a line without "/" matches the last component
        ("a\x0bb", "a\x0bb", False),  # only "\n" ends a line
    ],
)
def test_single_lines_match_as_in_git(tmp_path: Path, line: str, path: str, folder: bool) -> None:
    paths = [*(p + "/" for p in _parents(path)), path + ("/" if folder else "")]
    _lay_out(tmp_path, paths, {"": line + "\n"})
    expected = path in _git_check_ignore(tmp_path, [path])
    rules = Rules().with_gitignore("", (line + "\n").encode())
    assert (rules.reason(path, folder=folder) is not None) == expected


def _parents(path: str) -> list[str]:
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def test_gitignore_lines_are_split_as_git_splits_them() -> None:
    text = b"\xef\xbb\xbfa.md\r\nb.md\x0bc.md\n# a comment\n\\#d.md\n"
    rules = Rules().with_gitignore("", text)
    assert rules.reason("a.md", folder=False) is not None  # after the byte order mark, CR gone
    assert rules.reason("b.md\x0bc.md", folder=False) is not None  # one line
    assert rules.reason("b.md", folder=False) is None
    assert rules.reason("#d.md", folder=False) is not None
    assert parse_line(b"# a comment") is None and parse_line(b"") is None


# --------------------------------------------------------------------------- counted work


def _bound(text_length: int, pattern: str) -> int:
    """The work one check may cost: every position of the automaton (two per pattern byte at
    most, and its end) visited twice per byte read, and once before the first."""
    positions = 2 * len(pattern) + 1
    return 2 * (text_length + 1) * positions


@pytest.mark.parametrize("stars", [2, 12])
def test_the_star_family_costs_work_linear_in_the_name(stars: int) -> None:
    """``*a*a…*b`` against ``a…a.md``: a backtracking matcher takes time of degree ``stars``
    here. Counted, up to a name of 10^6 characters."""
    pattern = "*a" * stars + "*b"
    for length in (20, 28, 36, 10**3, 10**6):
        spec = parse_patterns([pattern])
        assert spec.last_match(b"a" * length + b".md", folder=False) is None
        assert spec.steps <= _bound(length + 3, pattern)
        # the automaton settles into a few states: about one cached step per byte
        assert spec.steps <= length + 3 + 2 * (len(pattern) + 4) * (len(pattern) + 1)


@pytest.mark.parametrize("max_cached_states", [64, MAX_CACHED_STATES])
def test_work_stays_linear_when_the_states_do_not_fit_the_cache(max_cached_states: int) -> None:
    """``*a`` and 16 ``?``: the states remember which of the last 17 bytes were "a" (2^16 of
    them), so the cache keeps filling and starting afresh; each byte still costs at most one
    visit of each position."""
    pattern = "*a" + "?" * 16
    noise = random.Random(7)
    for length in (10**3, 2 * 10**4):
        text = bytes(noise.choice(b"ab") for _ in range(length))
        spec = PatternSet([p for p in [parse_line(pattern.encode())] if p is not None],
                          max_cached_states=max_cached_states)  # fmt: skip
        matched = spec.last_match(text, folder=False) is not None
        assert matched == (len(text) >= 17 and text[-17] == ord("a"))
        assert spec.steps <= _bound(length, pattern)


def test_the_cache_limit_changes_the_work_not_the_answers() -> None:
    lines = [b"*.md", b"!keep*.md", b"docs/**/draft?.md", b"[[:digit:]]*"]
    names = [b"a.md", b"keep1.md", b"docs/x/y/draft1.md", b"1x", b"b.txt", b"docs/draft2.md"]
    answers = set()
    for limit in (1, 2, 3, MAX_CACHED_STATES):
        spec = PatternSet([p for p in map(parse_line, lines) if p is not None],
                          max_cached_states=limit)  # fmt: skip
        answers.add(tuple(spec.last_match(name, folder=False) for name in names * 3))
    assert answers == {(0, 1, 2, 3, None, 2) * 3}


@pytest.mark.parametrize(("max_cached_states", "cached"), [(4, True), (3, False)])
def test_the_cache_holds_exactly_its_limit(max_cached_states: int, cached: bool) -> None:
    """``ab`` read over ``ab``: two transitions and two new states of one position each, four
    entries. At a limit of four a second read is two cached bytes; one short, it starts afresh."""
    pattern = parse_line(b"ab")
    assert pattern is not None
    spec = PatternSet([pattern], max_cached_states=max_cached_states)
    assert spec.last_match(b"ab", folder=False) == 0
    before = spec.steps
    assert spec.last_match(b"ab", folder=False) == 0
    assert (spec.steps - before == 2) is cached
