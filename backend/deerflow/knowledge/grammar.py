"""A decoding grammar that lets a model cite only verified evidence, exactly.

Small models rarely copy ``[citation:Title](#knowledge-source-<32 hex>)`` character for character:
they drop hex digits, invent ids or cite a fake link that a document planted in its own text. The
readers reject all of those, but the answer has then lost its citation. A server that constrains
decoding (llama.cpp's GBNF ``grammar``, vLLM's ``guided_regex`` / ``guided_json``) can make every
link the model writes one of the links the preceding tool messages *verifiably* carry:
:func:`citation_grammar` reads those messages with :func:`~deerflow.knowledge.evidence.read_evidence`
(both formats) and builds that constraint, in both forms, from the verified records only — never
from the links that merely appear in a tool's text, since a document can show a forged one.

The rest of the answer stays free text, except that it cannot start a citation any other way. A
link is a citation when its raw label starts ``citation:`` or its destination (escapes and
entities decoded) starts ``#knowledge-`` / ``#user-content-knowledge-`` (contracts/README.md §4).
So, ignoring case, free text never has ``citation:`` right after an unescaped run of ``[``, nor
``knowledge`` or ``user`` right after a run of ``#``, nor ``\\#``, nor a character reference
(``&name;``, ``&#…``): a ``#`` can reach a destination only as itself, and the letters after it
only as themselves. Escapes pair left to right as CommonMark pairs them (``\\[`` is inert text,
``\\\\[`` is not), and a backslash never ends a stretch of text, so it cannot hide the link after
it. The rules are kept simple by asking one thing more: right after a run of ``[`` or ``#``, or
``&``, and a partial match (``[cit``), the next character is an ordinary one, not another of
``[ # & \\`` — except at the end of a stretch of text, where a partial match may stand. So
``#[x]`` and ``&&`` are refused; Markdown headings, ordinary links, ``[[1]]``, ``\\[``, ``C#`` and
``AT&T`` are not. Text around a link can still hide it (``!`` before it makes an image, a code span
makes it code): that loses a citation, never forges one.

Forms: :attr:`CitationGrammar.gbnf` for llama.cpp's ``grammar`` (its server and
``llama-cpp-python``'s ``LlamaGrammar``); :attr:`CitationGrammar.regex`, a regular expression
without look-around or back-references (Python's ``re``, vLLM's ``guided_regex``, ECMAScript);
:attr:`CitationGrammar.json_schema`, an object whose ``answer`` string has that pattern (vLLM's
``guided_json``, or ``response_format`` on a server whose JSON-schema mode enforces ``pattern``).
Pure; the cost is linear in the messages read and the links allowed.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from deerflow.knowledge.evidence import EvidenceFormat, read_evidence
from deerflow.knowledge.formatting import citation_link
from deerflow.knowledge.messages import message_view, text_parts
from deerflow.knowledge.native import native_link

__all__ = [
    "ANSWER_KEY",
    "MAX_GRAMMAR_LINKS",
    "CitableLink",
    "CitationGrammar",
    "NoCitableEvidenceError",
    "citable_links",
    "citation_grammar",
]

#: Links one grammar allows at most; past it the most recent ones are kept (a long thread's old
#: evidence goes first) and :attr:`CitationGrammar.omitted` counts the rest.
MAX_GRAMMAR_LINKS: Final = 1_000
#: The property of :attr:`CitationGrammar.json_schema` that holds the answer.
ANSWER_KEY: Final = "answer"


class NoCitableEvidenceError(ValueError):
    """A citation was required, but the messages carry no verified record to cite: the grammar
    would accept nothing. The caller's fault (ask for a citation only after evidence)."""


@dataclass(frozen=True, slots=True)
class CitableLink:
    """One link the grammar allows: exactly what the tool text gives the model to copy."""

    source_id: str
    link: str
    format: EvidenceFormat
    message_index: int
    """Position in the messages given of the tool message whose evidence verified it first."""


@dataclass(frozen=True, slots=True)
class CitationGrammar:
    """The constraint in every form; ``links`` in the order the messages gave them."""

    links: tuple[CitableLink, ...]
    require_citation: bool
    gbnf: str
    """GBNF for llama.cpp (``grammar`` in a request body; ``LlamaGrammar.from_string``)."""
    regex: str
    """The same language as a regular expression for a full match (``re.fullmatch``,
    ``guided_regex``); no anchors, look-around or back-references."""
    omitted: int
    """Verified links left out because there were more than ``max_links``."""
    _compiled: re.Pattern[str] = field(repr=False, compare=False)

    @property
    def json_schema(self) -> dict[str, Any]:
        """A JSON Schema whose ``answer`` string must match :attr:`regex` (anchored, as JSON
        Schema's ``pattern`` is a search)."""
        return {
            "type": "object",
            "properties": {ANSWER_KEY: {"type": "string", "pattern": f"^(?:{self.regex})$"}},
            "required": [ANSWER_KEY],
            "additionalProperties": False,
        }

    def accepts(self, text: str) -> bool:
        """Whether ``text`` is in the grammar's language (checked with :attr:`regex`)."""
        return isinstance(text, str) and self._compiled.fullmatch(text) is not None


def citable_links(messages: Iterable[object]) -> tuple[CitableLink, ...]:
    """Every verified record of the tool messages in ``messages`` as the link to copy, first
    occurrence of an id kept. Other messages, and records that do not verify, give nothing."""
    links: list[CitableLink] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        view = message_view(message)
        if view is None or view.role != "tool":
            continue
        evidence = read_evidence(view.content, view.artifact, tool_name=view.name)
        if not evidence.shared and not evidence.native:
            continue
        for source in evidence.shared:
            if source.id not in seen:
                seen.add(source.id)
                links.append(CitableLink(source.id, citation_link(source), "shared", index))
        if evidence.native:
            labels = _native_labels(text_parts(view.content))
            for native in evidence.native:
                if native.id not in seen:
                    seen.add(native.id)
                    link = labels.get(native.id) or native_link(native.id, _ordinal(native.id))
                    links.append(CitableLink(native.id, link, "native", index))
    return tuple(links)


def citation_grammar(
    messages: Iterable[object],
    *,
    require_citation: bool = False,
    ids: Collection[str] | None = None,
    max_links: int = MAX_GRAMMAR_LINKS,
) -> CitationGrammar:
    """The decoding constraint for an answer to ``messages``: free text in which every citation
    is one of the links the tool messages verifiably carry, copied exactly.

    ``require_citation``: the answer must hold at least one link (raises
    :class:`NoCitableEvidenceError` when there is none to allow). ``ids``: allow only these
    verified ids (an id that does not verify is never allowed; e.g. the ids of the last tool
    message). ``max_links``: at most this many links, the most recent kept.
    """
    if not 0 <= max_links <= MAX_GRAMMAR_LINKS:
        raise ValueError(f"max_links must be between 0 and {MAX_GRAMMAR_LINKS}")
    links = citable_links(messages)
    if ids is not None:
        wanted = frozenset(ids)
        links = tuple(link for link in links if link.source_id in wanted)
    omitted = max(0, len(links) - max_links)
    if omitted:
        links = links[omitted:]
    if require_citation and not links:
        raise NoCitableEvidenceError("no verified record to cite: nothing would be accepted")
    literals = [link.link for link in links]
    gbnf = _gbnf(literals, require_citation)
    regex = _regex(literals, require_citation)
    return CitationGrammar(links, require_citation, gbnf, regex, omitted, re.compile(regex))


# --------------------------------------------------------------------------- native labels

# DeerFlow's native header: ``[citation:N](#knowledge-<id>)`` with N the entry's position.
_NATIVE_LABELED: Final = re.compile(
    r"\[citation:([1-9][0-9]{0,2})\]\(#knowledge-([0-9a-f]{32}-[1-9][0-9]{0,2})\)"
)


def _native_labels(parts: Sequence[str]) -> dict[str, str]:
    """The first ``[citation:N](#knowledge-<id>)`` link of each id in the text: a native label
    is the entry's position in that message, which only the text says."""
    labels: dict[str, str] = {}
    for part in parts:
        for match in _NATIVE_LABELED.finditer(part):
            labels.setdefault(match.group(2), match.group(0))
    return labels


def _ordinal(source_id: str) -> int:
    return int(source_id.rsplit("-", 1)[1])


# --------------------------------------------------------------------------- the language

# The characters that start a guarded construct; every other character is ordinary text.
_SPECIALS: Final = "[#&\\"
_ALNUM: Final = "A-Za-z0-9"
# After a run of the opener, these words (any case) may not follow.
_GUARDED: Final[Mapping[str, tuple[str, ...]]] = {"[": ("citation:",), "#": ("knowledge", "user")}


@dataclass(frozen=True, slots=True)
class _Lit:
    text: str


@dataclass(frozen=True, slots=True)
class _Set:
    """One character: of ``chars`` (or, with ``negated``, not of ``chars``); ``ranges`` are
    ``a-z``-style pairs."""

    chars: str
    negated: bool = False
    ranges: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class _Seq:
    items: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Alt:
    options: tuple[_Node, ...]


@dataclass(frozen=True, slots=True)
class _Rep:
    """``item`` repeated: ``*`` (``least`` 0) or ``+`` (``least`` 1)."""

    item: _Node
    least: int


@dataclass(frozen=True, slots=True)
class _Opt:
    item: _Node


@dataclass(frozen=True, slots=True)
class _Ref:
    """A named part: a rule in GBNF, inlined in the regular expression."""

    name: str


_Node = _Lit | _Set | _Seq | _Alt | _Rep | _Opt | _Ref
_ALNUM_RANGES: Final = (("A", "Z"), ("a", "z"), ("0", "9"))


def _ordinary(also_not: str = "", ranges: tuple[tuple[str, str], ...] = ()) -> _Set:
    return _Set(_SPECIALS + also_not, negated=True, ranges=ranges)


def _either_case(char: str) -> _Set:
    return _Set(char.lower() + char.upper() if char.isalpha() else char)


def _walk(words: Sequence[str], depth: int = 0) -> tuple[_Node, _Node | None]:
    """After an opener run: (what completes a chunk, what may end a stretch of text), for the
    trie of ``words`` below ``depth``. A chunk ends on an ordinary character that leaves the
    trie; a forbidden word's last character has no way on."""
    nexts: dict[str, list[str]] = {}
    for word in words:
        if depth < len(word):
            nexts.setdefault(word[depth].lower(), []).append(word)
    leave = _ordinary("".join(_either_case(c).chars for c in nexts))
    options: list[_Node] = [leave]
    tails: list[_Node] = []
    for char, group in nexts.items():
        if all(len(word) == depth + 1 for word in group):
            continue  # the word would be complete: forbidden
        chunk, tail = _walk(group, depth + 1)
        options.append(_Seq((_either_case(char), chunk)))
        tails.append(_Seq((_either_case(char), tail)) if tail is not None else _either_case(char))
    return _Alt(tuple(options)), (_Opt(_Alt(tuple(tails))) if tails else None)


def _rules(literals: Sequence[str], require_citation: bool) -> dict[str, _Node]:
    """The language as named parts; ``root`` first."""
    chunks: list[_Node] = [_ordinary(), _Seq((_Lit("\\"), _Set("#", negated=True)))]
    tails: list[_Node] = []
    amp_name = _Rep(_Set("", ranges=_ALNUM_RANGES), 0)
    chunks.append(_Seq((_Lit("&"), amp_name, _ordinary(";", _ALNUM_RANGES))))
    tails.append(_Seq((_Lit("&"), amp_name)))
    for opener, words in _GUARDED.items():
        chunk, tail = _walk(words)
        run = _Rep(_Lit(opener), 1)
        chunks.append(_Seq((run, chunk)))
        tails.append(_Seq((run, tail)) if tail is not None else run)
    free = _Seq((_Rep(_Ref("chunk"), 0), _Opt(_Ref("tail"))))
    rules: dict[str, _Node] = {}
    if literals:
        more = _Rep(_Seq((_Ref("link"), _Ref("free"))), 1 if require_citation else 0)
        rules["root"] = _Seq((_Ref("free"), more))
    else:
        rules["root"] = _Ref("free")
    rules["free"] = free
    rules["chunk"] = _Alt(tuple(chunks))
    rules["tail"] = _Alt(tuple(tails))
    if literals:
        rules["link"] = _Alt(tuple(_Lit(text) for text in literals))
    return rules


def _gbnf(literals: Sequence[str], require_citation: bool) -> str:
    rules = _rules(literals, require_citation)
    return "".join(f"{name} ::= {_gbnf_node(node)}\n" for name, node in rules.items())


def _regex(literals: Sequence[str], require_citation: bool) -> str:
    rules = _rules(literals, require_citation)
    return _regex_node(rules["root"], rules)


# --------------------------------------------------------------------------- printers


def _gbnf_char(char: str, *, in_set: bool) -> str:
    code = ord(char)
    if char == "\\":
        return "\\\\"
    if char == '"' and not in_set:
        return '\\"'
    if in_set and char in "[]^-":
        return f"\\x{code:02X}"
    if 0x20 <= code < 0x7F:
        return char
    if code <= 0xFF:
        return f"\\x{code:02X}"
    if code <= 0xFFFF:
        return f"\\u{code:04X}"
    return f"\\U{code:08X}"


def _gbnf_node(node: _Node) -> str:
    if isinstance(node, _Lit):
        return '"' + "".join(_gbnf_char(c, in_set=False) for c in node.text) + '"'
    if isinstance(node, _Set):
        body = "".join(_gbnf_char(c, in_set=True) for c in node.chars)
        body += "".join(f"{lo}-{hi}" for lo, hi in node.ranges)
        return f"[{'^' if node.negated else ''}{body}]"
    if isinstance(node, _Seq):
        return " ".join(_gbnf_group(item) for item in node.items)
    if isinstance(node, _Alt):
        return " | ".join(_gbnf_node(option) for option in node.options)
    if isinstance(node, _Rep):
        return _gbnf_group(node.item) + ("+" if node.least else "*")
    if isinstance(node, _Opt):
        return _gbnf_group(node.item) + "?"
    return node.name


def _gbnf_group(node: _Node) -> str:
    text = _gbnf_node(node)
    return f"({text})" if isinstance(node, _Seq | _Alt) else text


# Characters escaped in a regular expression: the syntax of Python, ECMAScript and the guided
# decoders' dialects; everything else stands for itself.
_REGEX_SYNTAX: Final = frozenset("\\^$.|?*+()[]{}/")


def _regex_char(char: str, *, in_set: bool) -> str:
    code = ord(char)
    if in_set:
        if char in "\\]^-[":
            return "\\" + char
    elif char in _REGEX_SYNTAX:
        return "\\" + char
    if code < 0x20 or code == 0x7F:
        return f"\\x{code:02x}"
    return char


def _regex_node(node: _Node, rules: Mapping[str, _Node]) -> str:
    if isinstance(node, _Lit):
        return "".join(_regex_char(c, in_set=False) for c in node.text)
    if isinstance(node, _Set):
        body = "".join(_regex_char(c, in_set=True) for c in node.chars)
        body += "".join(f"{lo}-{hi}" for lo, hi in node.ranges)
        if not node.negated and len(node.chars) == 1 and not node.ranges:
            return _regex_char(node.chars, in_set=False)
        return f"[{'^' if node.negated else ''}{body}]"
    if isinstance(node, _Seq):
        return "".join(_regex_group(item, rules, alt_only=True) for item in node.items)
    if isinstance(node, _Alt):
        return "|".join(_regex_node(option, rules) for option in node.options)
    if isinstance(node, _Rep):
        return _regex_group(node.item, rules) + ("+" if node.least else "*")
    if isinstance(node, _Opt):
        return _regex_group(node.item, rules) + "?"
    return _regex_node(rules[node.name], rules)


def _regex_group(node: _Node, rules: Mapping[str, _Node], *, alt_only: bool = False) -> str:
    """``node`` as one unit: grouped unless it already is one (a set, or a one-character literal;
    within a sequence, anything but an alternation)."""
    text = _regex_node(node, rules)
    while isinstance(node, _Ref):
        node = rules[node.name]
    atomic = isinstance(node, _Set) or (isinstance(node, _Lit) and len(node.text) == 1)
    if atomic or (alt_only and not isinstance(node, _Alt)):
        return text
    return f"(?:{text})"
