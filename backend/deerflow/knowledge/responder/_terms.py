"""The words of a question and of a sentence, as the offline responder compares them. Pure.

People rarely ask in a document's own words: they write "dotfiles" for hidden files, "token" for
key, "sneak in" for plant, "crash" for raising an exception. So every word is stemmed (English
Snowball, so "indexing", "indexed" and "indexes" meet) and mapped to a *concept*: a small,
general thesaurus of the words people use about software puts synonyms under one concept, and a
few compounds ("symlinked") under the two concepts they stand for. Stop words and question
fillers ("actually", "happen", "way") carry no concept; a negation ("no", "not", "isn't",
"without") does, so "What if the handle isn't in the content?" meets "does not appear". The thesaurus is general vocabulary, not
a list of the bundled documents' answers: a word missing from it only costs a match.
``tests/test_responder.py`` covers it through the responder.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

import Stemmer

__all__ = ["Term", "concepts", "question_terms"]

_STEMMER: Final = Stemmer.Stemmer("english")
#: Distinct words whose concepts stay cached (a word is looked up many times per answer).
_CACHED_WORDS: Final = 65_536

_STOP_WORDS: Final = frozenset(
    """
    a about actually after again all also am an and any anyone anything are as at be because been
    before being both but by can could did do does done each either else even ever every
    exactly for from further get gets getting go goes going got had has have having he her here his
    how however i if in into is it its itself just kind let like lot me might more much must my
    myself now always usually sometimes of off on once one only onto or other our out own people per please put
    quite rather really same say says she should so some someone something sort still such tell
    than that the their them then there these they thing things this those through thus to too try
    under until up us use used uses using very want wants was way we were what whatever when
    whenever where whether which while who whom whose why will with within would yet you
    your yours happen happens happened happening mean means meant whole stuff bit many
    above across against along among around behind below beneath beside besides between beyond
    despite during except inside instead outside over toward towards upon via
    """.split()
)

#: Words that mean the same thing to someone asking about software. The first word of a group
#: names its concept; a word may belong to several groups.
_SYNONYMS: Final = (
    "verify verification check checks validate validation confirm audit",
    "forge forged forgery fake counterfeit spoof spoofed tamper tampered",
    "plant sneak inject smuggle slip",
    "alter change edit modify tamper",
    "remove delete disappear prune strip erase",
    "skip ignore exclude omit leave left pick",
    "key token credential secret",
    "exception crash throw raise traceback stacktrace",
    "error failure fail",
    "corrupt broken damaged",
    "conversation thread chat history",
    "caller client",
    "show display render appear see view",
    "url link address href hyperlink",
    "citation cite cited",
    "require need needed required mandatory necessary",
    "configure configuration config set setting settings setup point connect",
    "search query retrieval retrieve lookup find",
    "hit result match",
    "answer reply response respond",
    "truncate cut trim shorten",
    "size big large length long limit cap maximum max most",
    "character char digit",
    "title name",
    "list array",
    "form syntax format",
    "compute calculate derive recompute",
    "id identifier",
    "provider backend",
    "chunk piece segment passage",
    "split divide",
    "document doc",
    "version release",
    "update rebuild reindex refresh rerun",
    "sync drift consistent",
    "parent child subagent",
    "not no never without none nothing isn doesn don didn aren wasn weren cannot nor",
)
#: Irregular forms the stemmer leaves alone, as the word they inflect.
_IRREGULAR: Final = {
    "kept": "keep",
    "left": "leave",
    "built": "build",
    "rebuilt": "rebuild",
    "sent": "send",
    "found": "find",
    "made": "make",
    "wrote": "write",
    "written": "write",
    "ran": "run",
    "shown": "show",
    "seen": "see",
    "saw": "see",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "threw": "throw",
    "thrown": "throw",
    "held": "hold",
    "chose": "choose",
    "chosen": "choose",
    "knew": "know",
    "known": "know",
    "began": "begin",
    "begun": "begin",
    "led": "lead",
    "lost": "lose",
    "told": "tell",
    "thought": "think",
    "stood": "stand",
    "hid": "hide",
    "hidden": "hide",
    "fed": "feed",
    "fell": "fall",
    "fallen": "fall",
    "brought": "bring",
    "bought": "buy",
    "caught": "catch",
    "taught": "teach",
    "spoke": "speak",
    "spoken": "speak",
    "broke": "break",
    "drove": "drive",
    "driven": "drive",
    "ate": "eat",
    "eaten": "eat",
    "rode": "ride",
    "ridden": "ride",
    "froze": "freeze",
    "frozen": "freeze",
    "stole": "steal",
    "stolen": "steal",
    "sought": "seek",
    "split": "split",
}
#: Words that stand for two concepts (each stemmed and mapped like any other word).
_COMPOUNDS: Final = {
    "dotfile": ("hide", "file"),
    "dotfiles": ("hide", "file"),
    "symlink": ("symbolic", "link"),
    "symlinks": ("symbolic", "link"),
    "symlinked": ("symbolic", "link"),
    "io": ("input", "output"),
}
_IO_RE = re.compile(r"\bI/O\b", re.IGNORECASE)
_WORD_RE = re.compile(r"\w+")


def _stem(word: str) -> str:
    return str(_STEMMER.stemWord(word))


def _thesaurus() -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for group in _SYNONYMS:
        words = group.split()
        concept = _stem(words[0])
        for word in words:
            meanings = found.setdefault(_stem(word), [])
            if concept not in meanings:
                meanings.append(concept)
    return {stem: tuple(meanings) for stem, meanings in found.items()}


_THESAURUS: Final = _thesaurus()


@functools.lru_cache(maxsize=_CACHED_WORDS)
def _word_concepts(word: str) -> tuple[str, ...]:
    """The concepts of one lower-case word (none for a stop word or a one-letter word)."""
    if word in _STOP_WORDS or len(word) < 2:
        return ()
    if word in _COMPOUNDS:
        return tuple(c for part in _COMPOUNDS[word] for c in _word_concepts(part))
    stem = _stem(_IRREGULAR.get(word, word))
    return _THESAURUS.get(stem, (stem,))


def _words(text: str) -> Iterable[str]:
    """Lower-case words; an identifier (``knowledge_sources``) is kept whole and also split."""
    for word in _WORD_RE.findall(_IO_RE.sub("input output", text)):
        lowered = word.lower()
        if "_" in lowered.strip("_"):
            yield lowered
            yield from (part for part in lowered.split("_") if part)
        else:
            yield lowered.strip("_")


#: Distinct sentences whose concepts stay cached (the same evidence is read for many questions),
#: each at most ``_CACHED_TEXT_CHARS`` long, so the cache holds a few megabytes at most.
_CACHED_TEXTS: Final = 4_096
_CACHED_TEXT_CHARS: Final = 1_000


def concepts(text: str) -> tuple[str, ...]:
    """The concepts of ``text`` in order (an identifier stays one concept, besides its parts)."""
    return _cached_concepts(text) if len(text) <= _CACHED_TEXT_CHARS else _concepts(text)


@functools.lru_cache(maxsize=_CACHED_TEXTS)
def _cached_concepts(text: str) -> tuple[str, ...]:
    return _concepts(text)


def _concepts(text: str) -> tuple[str, ...]:
    found: list[str] = []
    for word in _words(text):
        if "_" in word:
            found.append(word)
        else:
            found.extend(_word_concepts(word))
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Term:
    concept: str
    specific: bool
    """Named in the question as a proper name, acronym, code or identifier ("Kubernetes",
    "GPU", "E1042", ``knowledge_sources``): if the evidence never mentions it, the question is
    about something else."""


def question_terms(question: str) -> list[Term]:
    """The distinct concepts of a question, each marked specific or not (see :class:`Term`)."""
    terms: dict[str, Term] = {}
    for index, match in enumerate(_WORD_RE.finditer(_IO_RE.sub("input output", question))):
        word = match.group()
        specific = "_" in word.strip("_") or (
            any(c.isupper() for c in word[1:])
            or (index > 0 and word[0].isupper() and word != "I")
            or (any(c.isdigit() for c in word) and any(c.isalpha() for c in word))
        )
        for concept in concepts(word):
            previous = terms.get(concept)
            terms[concept] = Term(concept, specific or (previous is not None and previous.specific))
    return list(terms.values())
