"""Which sentences of the verified evidence answer a question, best first. Pure.

The offline responder quotes; this module chooses what. Each excerpt is read as whole sentences
(hard-wrapped lines joined, headings, fences and table rows set aside, fragments at a cut edge
dropped; where a sentence ends and which line is a heading are the chunker's rules, in
:mod:`deerflow.knowledge.text`); a sentence that opens with a pronoun ("It needs no server…") is only ever quoted
together with the sentence before it, which says what "it" is. Every candidate is scored by the
share of the question's concepts (:mod:`deerflow.knowledge.responder._terms`) it states, each
weighted by how rare it is in the evidence, with its section heading and document title as
context worth less than the sentence itself. The first sentence under a heading (a Markdown one,
a FAQ's question, a paragraph's run-in "Updates." heading) is where a section answers its heading,
so it gains what its heading shares with the question.

* The best candidate is quoted first. A question is declined when even the best states too
  little of it; a name, acronym or code the question asks about that no retrieved sentence
  mentions weighs heavily, so "Which Python version…" is not answered with LightRAG's version.
* A further quote is added only for a clause of a multi-clause question ("…, and which header
  carries it?") that the quotes so far leave unanswered, and only when it answers that clause,
  still speaks to the question as a whole and comes from the document quoted first.

``tests/test_responder.py`` covers it through the responder (and its sentence splitting
directly); ``tests/test_eval.py`` checks the evaluation it is measured by.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from deerflow.knowledge.responder._terms import Term, concepts, question_terms
from deerflow.knowledge.text import ends_sentence, looks_like_heading, sentence_ends

__all__ = [
    "CLAUSE_ANSWERED",
    "CONFIDENT_COVERAGE",
    "HEADING_WEIGHT",
    "MAX_CLOSEST",
    "MAX_UNSTATED_ELSEWHERE",
    "MIN_COVERAGE",
    "Candidate",
    "Choice",
    "Evidence",
    "choose",
    "sentences",
]

#: A sentence stating less than this weighted share of the question is not even a close passage.
MIN_COVERAGE: Final = 0.3
#: The responder answers only when it is confident that its first quote answers the question: the
#: best sentence states at least this weighted share of the question (its section heading and
#: document title counting as context)…
CONFIDENT_COVERAGE: Final = 0.5
#: …and no question concept that it leaves unstated, although other retrieved sentences state it,
#: weighs more than this share of the question (the evidence speaks of it, elsewhere: the best
#: sentence is about something next to what was asked). Both were chosen on the evaluation set's
#: tune split (benchmarks/eval) for precision first, and are measured on its held-out split.
MAX_UNSTATED_ELSEWHERE: Final = 0.25
#: A declined question shows at most this many closest passages.
MAX_CLOSEST: Final = 3
#: A further quote must state at least this weighted share of the whole question, divided by its
#: number of clauses (a quote that answers one of two clauses states about half of it).
FURTHER_COVERAGE: Final = 0.8
#: A clause whose weighted share stated by the quotes so far reaches this is answered.
CLAUSE_ANSWERED: Final = 0.6
#: A question concept found only in the heading or title of the sentence's section counts this
#: much of its weight.
HEADING_WEIGHT: Final = 0.7
#: A concept the question names as a proper name, acronym or code weighs this many times the
#: heaviest concept when no retrieved sentence mentions it.
MISSING_SPECIFIC_WEIGHT: Final = 5.0
#: Inverse frequencies are raised to this power: the rarest concepts a question shares with a
#: sentence are what tells the answering sentence from its neighbours.
WEIGHT_POWER: Final = 1.0
#: Any other concept no retrieved sentence states weighs at least this share of the heaviest.
MISSING_WEIGHT: Final = 0.8
#: Each pair of consecutive question concepts that also occur consecutively in a sentence adds
#: this share of the pair's weight to its score (not to its coverage): word order tells "the
#: reserved keys" from "keys are reserved" only a little.
PAIR_WEIGHT: Final = 0.3
#: A document whose title names what the question asks about is that topic's home: its sentences
#: gain this share of the weight of the question concepts its title names.
TITLE_WEIGHT: Final = 0.6
#: The tool's own ranking breaks near-ties: the nth hit's sentences lose this much score per rank.
RANK_PENALTY: Final = 0.01
#: The first sentence of a section is where the section answers its heading: it gains this share
#: of the weight of the question concepts its heading names (a FAQ's question, a run-in heading).
LEAD_WEIGHT: Final = 0.4

_BLOCK_SPLIT_RE = re.compile(r"\n\s*\n")
_LIST_ITEM_RE = re.compile(r"(?:[-*+]|\d{1,3}\.)\s")
_PRONOUN_START_RE = re.compile(
    r"(?:It|Its|They|Their|Them|This|These|That|Those|Both|Either|Neither|Such|He|She)\b"
)
#: A paragraph's run-in heading: up to four capitalized words and a full stop.
_RUN_IN_HEADING_RE = re.compile(r"[A-Z][\w-]*(?: [\w-]+){0,3}\.")
_WH_NOUN_RE = re.compile(r"\s*(?:what|which)\s+(\w+)", re.IGNORECASE)
_HOW_VERB_RE = re.compile(
    r"\s*how\s+(?:do|can|could|should|would|may|might|must|will|shall)\s+(?:i|we|you|one)\s+(\w+)",
    re.IGNORECASE,
)
#: Anywhere in a question ("Is there a cap on how many…"): it asks for a quantity.
_HOW_MUCH_RE = re.compile(
    r"\bhow\s+(?:much|many|long|big|large|fast|often|old|far|soon)\b", re.IGNORECASE
)
#: A quantity: a number standing alone (not part of "FTS5", "v1" or "SHA-256") or a number word.
_NUMBER_RE = re.compile(
    r"(?<![\w.-])\d[\d,.]*(?![\w-])|\b(?:two|three|four|five|six|seven|eight|nine|ten|eleven|"
    r"twelve|twenty|thirty|forty|fifty|hundred|thousand|million|billion|twice|dozen)\b",
    re.IGNORECASE,
)
#: "how many files…": the thing counted is the word after "many".
_HOW_MANY_RE = re.compile(r"\bhow\s+many\s+(\w+)", re.IGNORECASE)
#: "When was it released?" asks for a date (but "When does a reader drop a record?" for a
#: condition).
_WHEN_DATE_RE = re.compile(r"\s*when\s+(?:was|were|did)\b", re.IGNORECASE)
_DATE_RE = re.compile(
    r"\b(?:1[89]\d\d|2\d\d\d)\b|\b(?:January|February|March|April|May|June|July|August|"
    r"September|October|November|December)\b"
)
_WORD_RE = re.compile(r"[^\W\d_][\w-]*")
#: A quantity's unit follows it within this many words (and characters): "100 source records".
_UNIT_WORDS: Final = 3
_UNIT_WINDOW_CHARS: Final = 40
_TOKEN_RE = re.compile(r"\S+")
#: A path's last part is a file name with an extension ("lightrag-setup.md").
_FILE_NAME_RE = re.compile(r"/[\w-]+\.[A-Za-z]\w{0,7}\Z")
#: Clause boundaries of a question: a comma, semicolon, colon or question mark, or " and ".
_CLAUSE_RE = re.compile(r"[,;:?]\s*|\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Candidate:
    text: str
    """What would be quoted: one sentence, or a sentence and the pronoun-led one after it."""
    heading: str
    """The heading of the section the sentence is in, as far as the excerpt shows it."""
    lead: bool = False
    """The first sentence under its heading in the excerpt: where a section answers its title."""


def _is_complete(sentence: str, *, at_edge: bool) -> bool:
    """A whole statement: long enough, ended where a sentence ends, and begun as one — with a
    capital, a letter of a script without case, a digit, code or a quotation mark, or in lower case
    ("deerflow-knowledge is…", a name spelled so) unless it is the first text of the excerpt
    (``at_edge``), which may be the tail of a sentence the chunk cut."""
    first = sentence[:1]
    return (
        len(sentence) > 20
        and ends_sentence(sentence)
        and (
            (first.isalpha() and (not first.islower() or not at_edge))
            or first.isdigit()
            or first in "`\"'“"
        )
    )


def sentences(excerpt: str) -> list[Candidate]:
    """The quotable candidates of an excerpt: whole sentences (hard-wrapped lines joined, Markdown
    headings, fences and table rows skipped — a heading becomes the context of the sentences below
    it — PDF and text headings split from the sentence that follows them, and the fragments an
    excerpt starts or ends with dropped); a pronoun-led sentence joined to the one before it."""
    found: list[Candidate] = []
    heading = ""
    lead = False
    edge = True  # nothing of the excerpt read yet: its first words may be a cut sentence's tail
    for block in _BLOCK_SPLIT_RE.split(excerpt):
        lines = [line.strip() for line in block.splitlines() if line.strip()]
        if not lines:
            continue
        at_start, edge = edge, False
        if lines[0].startswith(("```", "~~~", "|")):
            continue
        if lines[0].startswith("#"):
            heading = lines[0].lstrip("#").strip()
            lines = lines[1:]
            lead, at_start = True, False
        if lines and looks_like_heading(lines[0], lines[1] if len(lines) > 1 else ""):
            heading = lines[0]
            lines = lines[1:]
            lead, at_start = True, False
        # A list item starts a new statement; other lines continue the one before.
        items: list[list[str]] = []
        for line in lines:
            if not items or _LIST_ITEM_RE.match(line):
                items.append([line])
            else:
                items[-1].append(line)
        for number, item in enumerate(items):
            previous: str | None = None
            joined = " ".join(item)
            cuts = [0, *sentence_ends(joined), len(joined)]
            for index, (start, end) in enumerate(itertools.pairwise(cuts)):
                sentence = joined[start:end].strip()
                if (
                    not lead
                    and number == 0
                    and index == 0
                    and _RUN_IN_HEADING_RE.fullmatch(sentence)
                ):
                    # "Updates. Every run compares…": a run-in heading names the paragraph (but
                    # "No." right under a FAQ question is its answer, not a heading).
                    heading = sentence[:-1]
                    lead = True
                    continue
                if not _is_complete(sentence, at_edge=at_start and number == 0 and index == 0):
                    previous = None
                    continue
                if _PRONOUN_START_RE.match(sentence):
                    if previous is not None:
                        found.append(Candidate(f"{previous} {sentence}", heading))
                else:
                    found.append(Candidate(sentence, heading, lead))
                    lead = False
                previous = sentence
    return found


@dataclass(frozen=True, slots=True)
class Evidence:
    """One quotable candidate with where it came from."""

    candidate: Candidate
    rank: int
    """The rank of its source among the tool's verified sources (0 first)."""
    position: int
    title: str


@dataclass(frozen=True, slots=True)
class _Scored:
    evidence: Evidence
    words: frozenset[str]
    context: frozenset[str]
    pairs: frozenset[tuple[str, str]]
    titled: frozenset[str] = frozenset()
    """The concepts of the document's title."""
    heading: frozenset[str] = frozenset()
    """The concepts of the sentence's section heading."""


def _weights(terms: Sequence[Term], scored: Sequence[_Scored]) -> dict[str, float]:
    """Inverse frequency of each concept over the candidates. A concept no candidate states
    weighs the mean of those they do — or, if the question names it specifically, more than the
    heaviest: evidence that never mentions what the question asks about does not answer it."""
    total = len(scored)
    counts = {t.concept: 0 for t in terms}
    for item in scored:
        for concept in item.words & counts.keys():
            counts[concept] += 1
    rarest = math.log(1 + (total + 1) / 0.5) ** WEIGHT_POWER
    weights = {
        c: math.log(1 + (total + 1) / (n + 0.5)) ** WEIGHT_POWER for c, n in counts.items() if n
    }
    mentioned = {c for item in scored for c in item.words | item.context}
    typical = sum(weights.values()) / len(weights) if weights else rarest
    for term in terms:
        if term.concept in weights:
            continue
        if term.specific and term.concept not in mentioned:
            weights[term.concept] = MISSING_SPECIFIC_WEIGHT * rarest
        else:
            weights[term.concept] = max(typical, MISSING_WEIGHT * rarest)
    return weights


def _coverage(weights: dict[str, float], concepts_: Sequence[str], item: _Scored) -> float:
    total = sum(weights[c] for c in concepts_)
    if not total:
        return 0.0
    stated = sum(weights[c] for c in concepts_ if c in item.words)
    stated += HEADING_WEIGHT * sum(
        weights[c] for c in concepts_ if c in item.context and c not in item.words
    )
    return stated / total


def _score(weights: dict[str, float], order: Sequence[str], item: _Scored) -> float:
    score = _coverage(weights, order, item)
    total = sum(weights[c] for c in order)
    if item.evidence.candidate.lead:
        score += LEAD_WEIGHT * sum(weights[c] for c in order if c in item.heading) / total

    for first, second in itertools.pairwise(order):
        if (first, second) in item.pairs:
            score += PAIR_WEIGHT * (weights[first] + weights[second]) / 2 / total
    score += TITLE_WEIGHT * sum(weights[c] for c in order if c in item.titled) / total
    return score - RANK_PENALTY * item.evidence.rank


def _clauses(question: str, terms: Sequence[Term]) -> list[list[str]]:
    """The concepts of each clause of the question that has any (one clause if it has one)."""
    known = {t.concept for t in terms}
    found = []
    for part in _CLAUSE_RE.split(question):
        clause = [c for c in dict.fromkeys(concepts(part)) if c in known]
        if clause:
            found.append(clause)
    return found


@dataclass(frozen=True, slots=True)
class _Focus:
    """What an answer must state, read off how the question opens: "Which *port*…" asks for a
    port, "How do I *deploy*…" for deploying, "how many *files*…" for a number of files, "how
    long…" for a number with its unit, "When was… released?" for a date."""

    concept: str | None = None
    number: bool = False
    unit: str | None = None
    """"how many *files*": the number must count files (a concept within a few words after it)."""
    date: bool = False

    def met(self, item: _Scored) -> bool:
        text = item.evidence.candidate.text
        if self.number and not any(
            _counts(text, match, self.unit) for match in _NUMBER_RE.finditer(text)
        ):
            return False
        if self.date and not _DATE_RE.search(text):
            return False
        return self.concept is None or self.concept in item.words | item.context


def _counts(text: str, number: re.Match[str], unit: str | None) -> bool:
    """Whether ``number`` in ``text`` is a quantity with a unit — of ``unit`` when given: "800
    characters", "one hundred validated sources" (a port in a URL or a version is not)."""
    after = _WORD_RE.findall(text[number.end() : number.end() + _UNIT_WINDOW_CHARS])[:_UNIT_WORDS]
    if not after or text[number.end() : number.end() + 1] not in (" ", ""):
        return False
    if unit is None:
        return bool(concepts(after[0]))
    return any(unit in concepts(word) for word in after)


def _focus(question: str) -> _Focus:
    if _WHEN_DATE_RE.match(question):
        return _Focus(date=True)
    many = _HOW_MANY_RE.search(question)
    if many is not None:
        found = concepts(many.group(1))
        return _Focus(number=True, unit=found[0] if found else None)
    if _HOW_MUCH_RE.search(question):
        return _Focus(number=True)
    match = _WH_NOUN_RE.match(question) or _HOW_VERB_RE.match(question)
    if match is None:
        return _Focus()
    word = match.group(1)
    # "Which libraries…" asks for members of a class, which a document names by the members.
    if match.re is _WH_NOUN_RE and word.lower().endswith("s") and not word.lower().endswith("ss"):
        return _Focus()
    found = concepts(word)
    return _Focus(found[0] if found else None)


@dataclass(frozen=True, slots=True)
class Choice:
    """What the responder quotes: an answer it is confident of, or the closest passages."""

    answer: tuple[Evidence, ...] = ()
    """The quotes of the answer, best first; empty when the question is declined."""
    closest: tuple[Evidence, ...] = ()
    """When declined: the sentences that came closest, best first (never an answer)."""


def _confident(
    weights: dict[str, float],
    order: Sequence[str],
    best: _Scored,
    scored: Sequence[_Scored],
    *,
    clauses: int,
    first: _Scored,
) -> bool:
    """Whether the answer ``best`` (the concepts all its quotes state) answers the question, its
    ``first`` quote a clause of it at least (see :data:`CONFIDENT_COVERAGE`)."""
    if _coverage(weights, order, best) < CONFIDENT_COVERAGE:
        return False
    if _coverage(weights, order, first) < CONFIDENT_COVERAGE / max(clauses, 1):
        return False
    total = sum(weights[c] for c in order)
    stated = frozenset().union(*(s.words | s.context for s in scored))
    unstated = [c for c in order if c not in best.words | best.context and c in stated]
    return all(weights[c] / total <= MAX_UNSTATED_ELSEWHERE for c in unstated)


def _without_paths(sentence: str) -> str:
    """``sentence`` with each file path it writes out ("such as providers/lightrag-setup.md")
    blanked: a path names a file as an example or a location; the words in it are not what the
    sentence says (a document's own title, a path, still counts as its context)."""
    return _TOKEN_RE.sub(lambda m: " " if _is_path(m.group()) else m.group(), sentence)


def _is_path(token: str) -> bool:
    token = token.strip("`'\"()[]<>,;:.!?")
    return "/" in token and "://" not in token and _FILE_NAME_RE.search(token) is not None


def choose(
    question: str, evidence: Sequence[Evidence], *, limit: int, closest: int = MAX_CLOSEST
) -> Choice:
    """The candidates to quote for ``question``: an answer of at most ``limit`` quotes, best
    first, when the best candidate surely answers it; otherwise at most ``closest`` closest
    candidates (none when nothing comes close)."""
    terms = question_terms(question)
    if not terms or not evidence:
        return Choice()
    scored = []
    for item in evidence:
        words = concepts(_without_paths(item.candidate.text))
        context = concepts(f"{item.candidate.heading} {item.title}")
        scored.append(
            _Scored(
                item,
                frozenset(words),
                frozenset(context),
                frozenset(itertools.pairwise(words)),
                frozenset(concepts(item.title)),
                frozenset(concepts(item.candidate.heading)),
            )
        )
    weights = _weights(terms, scored)
    order = [t.concept for t in terms]
    focus = _focus(question)

    def key(s: _Scored) -> tuple[float, int, int]:
        return (-_score(weights, order, s), s.evidence.rank, s.evidence.position)

    ranked = sorted((item for item in scored if focus.met(item)), key=key)
    # Sentences that state what the question opens with come first among the closest, too.
    nearest = [*ranked, *sorted((s for s in scored if not focus.met(s)), key=key)]
    if not ranked:
        return _closest(weights, order, nearest, closest)
    best = ranked[0]
    chosen = [best]
    seen = {best.evidence.candidate.text}
    clauses = _clauses(question, terms)
    for clause in clauses:
        if len(chosen) >= limit:
            break
        answered = _Scored(
            best.evidence,
            frozenset().union(*(s.words for s in chosen)),
            frozenset().union(*(s.context for s in chosen)),
            frozenset(),
        )
        if _coverage(weights, clause, answered) >= CLAUSE_ANSWERED:
            continue
        # A question of several clauses asks about one topic: the further quote comes from the
        # document that answered it first, not from whichever one shares a clause's words.
        for other in sorted(
            (s for s in scored if s.evidence.title == best.evidence.title),
            key=lambda s: (-_coverage(weights, clause, s), -_score(weights, order, s)),
        ):
            if other.evidence.candidate.text in seen:
                continue
            if _coverage(weights, clause, other) >= CLAUSE_ANSWERED and _coverage(
                weights, order, other
            ) >= FURTHER_COVERAGE / len(clauses):
                chosen.append(other)
                seen.add(other.evidence.candidate.text)
            break
    answered = _Scored(
        best.evidence,
        frozenset().union(*(s.words for s in chosen)),
        frozenset().union(*(s.context for s in chosen)),
        frozenset(),
    )
    if not _confident(weights, order, answered, scored, clauses=len(clauses), first=best):
        return _closest(weights, order, nearest, closest)
    return Choice(answer=tuple(s.evidence for s in chosen))


def _closest(
    weights: dict[str, float], order: Sequence[str], ranked: Sequence[_Scored], most: int
) -> Choice:
    """A declined question's closest passages: the best-ranked distinct sentences that state
    some of the question themselves and at least :data:`MIN_COVERAGE` of it."""
    closest: list[Evidence] = []
    for item in ranked:
        if len(closest) >= most:
            break
        text = item.evidence.candidate.text
        if _coverage(weights, order, item) < MIN_COVERAGE or not item.words & set(order):
            continue
        # A pronoun-led sentence is a candidate both alone and with the one before it.
        if not any(text in c.candidate.text or c.candidate.text in text for c in closest):
            closest.append(item.evidence)
    return Choice(closest=tuple(closest))
