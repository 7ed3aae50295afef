"""The local index's query plan: BM25 over FTS5 with a bound on the rows it scores.

FTS5's ``bm25()`` costs about the same per matching row whatever the term, and once per query it
counts every row of each term's posting list. A query that ORs a rare word with a word found in a
quarter of 100,000 chunks therefore scores 25,000 rows to return 8. So terms are split by how many
chunks they match (counted only up to ``scored_rows`` + 1, which is cheap):

* **Selective terms** (together matching at most ``scored_rows`` chunks) are ranked by FTS5's
  ``bm25()`` exactly as before. When every term is selective, that is the whole plan, and results
  are exactly the plain OR query's.
* **Common terms** (the rest) never enter a scored FTS5 expression. The best ``candidates``
  chunks for the selective terms are re-scored with each common term's BM25 share, computed
  here from its frequency in the candidate (tokenized by the same FTS5 tokenizer in a temporary
  table) and its inverse document frequency (estimated from where the bounded count stopped).
  Length normalization is left out of that share (``b = 0``): common terms weigh little, and the
  estimate is kept cheap. Chunks that hold only common terms fill the places the selective
  terms leave empty, as in an OR query.
* A query of **common terms only** (``the was for``) has no usable ranking signal left, FTS5
  itself scoring such terms at almost zero: the first ``candidates`` chunks holding all of them
  (else any of them), in index order, are ranked by the same common-term shares.

Free text becomes query terms first (:func:`tokenize`, :func:`query_terms`): lower-cased word
tokens, English function words dropped, at most ``MAX_QUERY_TERMS`` distinct ones. Every term is
then quoted as an FTS5 string, so user text can never inject FTS5 syntax (``OR``, ``NEAR(``,
``title:*``, ``^``).

Tested in tests/test_providers_local.py (queries and their BM25 plan).
"""

from __future__ import annotations

import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = [
    "DEFAULT_CANDIDATES",
    "DEFAULT_SCORED_ROWS",
    "MAX_QUERY_TERMS",
    "Row",
    "fts_query",
    "query_terms",
    "search",
    "tokenize",
]

#: Distinct query terms kept, in order of first appearance; the rest are ignored.
MAX_QUERY_TERMS: Final = 64

#: At most this many matching rows are scored by FTS5's bm25() in one query.
DEFAULT_SCORED_ROWS: Final = 4_000
#: Chunks re-scored with the common terms' shares.
DEFAULT_CANDIDATES: Final = 64
#: FTS5's bm25() constant (``k1``) and its floor for the IDF of a term in over half the rows.
_K1: Final = 1.2
_MIN_IDF: Final = 1e-6

_TEMP_SCHEMA: Final = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.deerflow_candidates "
    "USING fts5(text, content='', tokenize={})",
    "CREATE VIRTUAL TABLE IF NOT EXISTS temp.deerflow_candidate_terms "
    "USING fts5vocab(temp, deerflow_candidates, 'instance')",
)

_TOKEN_RE = re.compile(r"[^\W_]+")
#: Dropped from queries (unless nothing else is left): English function words — pronouns,
#: auxiliaries, articles, conjunctions, question words and the pieces a tokenizer cuts from
#: contractions ("doesn't" → "doesn", "t"). They match nearly every chunk, and a question is
#: mostly made of them ("Does it have to…?"): kept, they rank chunks by how a question is asked
#: rather than by what it asks about. Negations ("no", "not", "never", "without") and words of
#: position or order ("before", "after", "only") carry meaning and are kept.
_STOPWORDS: Final = frozenset(
    """
    a about actually all also am an and any anyone anything are aren as at be because been being
    both but by can cannot could couldn d did didn do does doesn doing don each either else even
    ever every for from had hadn has hasn have haven having he her here hers herself him himself
    his how however i if in into is isn it its itself just let ll m many me might much must
    mustn my myself neither nor now of on one onto or ought our ours ourselves own per quite
    rather re really s shall shan she should shouldn so some someone something such t than that
    the their theirs them themselves then there these they this those through thus to too upon
    us ve very via was wasn we were weren what whatever when whenever where whether which while
    who whom whose why will with within would wouldn yet you your yours yourself yourselves
    """.split()
)


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens (letters and digits) with common English stopwords dropped.

    If every token is a stopword, the stopwords are kept, so ``"the who"`` still searches.
    """
    tokens = [token.lower() for token in _TOKEN_RE.findall(text)]
    kept = [token for token in tokens if token not in _STOPWORDS]
    return kept or tokens


def fts_query(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> str | None:
    """A safe FTS5 MATCH expression for free ``text``, or None when it has no word tokens.

    Every token is a double-quoted FTS5 string (tokens hold only letters and digits, so there is
    nothing to escape), joined with ``OR``: operators, column filters, prefixes and ``NEAR`` in the
    user's text are just words.
    """
    terms = query_terms(text, max_terms=max_terms)
    if not terms:
        return None
    return " OR ".join(f'"{term}"' for term in terms)


def query_terms(text: str, *, max_terms: int = MAX_QUERY_TERMS) -> list[str]:
    """The distinct tokens of ``text`` that a search looks for, in order, at most ``max_terms``."""
    return list(dict.fromkeys(tokenize(text)))[:max_terms]


@dataclass(frozen=True, slots=True)
class Row:
    text: str
    title: str
    page: int | None
    score: float
    """Higher is better (FTS5's bm25() negated, plus common-term shares)."""


def _phrase(term: str) -> str:
    return f'"{term}"'  # terms hold only letters and digits: nothing to escape


def _any(terms: Sequence[str]) -> str:
    return " OR ".join(_phrase(t) for t in terms)


def _ranked_sql(weights: tuple[float, float]) -> str:
    # Rank inside FTS5 first and join only the winners: reading every matching chunk row before
    # the LIMIT would cost more than the scoring itself.
    return f"""
WITH top AS (
    SELECT rowid AS id, bm25(chunks_fts, {weights[0]}, {weights[1]}) AS score
    FROM chunks_fts WHERE chunks_fts MATCH ? ORDER BY score, rowid LIMIT ?
)
SELECT c.id, c.text, c.title, c.page, -top.score
FROM top JOIN chunks AS c ON c.id = top.id
ORDER BY top.score, top.id
"""


_UNRANKED_SQL: Final = """
SELECT c.id, c.text, c.title, c.page, 0.0
FROM (SELECT rowid AS id FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?) AS top
JOIN chunks AS c ON c.id = top.id
ORDER BY c.id
"""


def search(
    connection: sqlite3.Connection,
    terms: Sequence[str],
    count: int,
    *,
    weights: tuple[float, float],
    tokenizer: str,
    scored_rows: int = DEFAULT_SCORED_ROWS,
    candidates: int = DEFAULT_CANDIDATES,
) -> list[Row]:
    """The best ``count`` chunks for distinct query ``terms`` (see the module docstring)."""
    ranked = _ranked_sql(weights)
    (last_id,) = connection.execute("SELECT coalesce(max(id), 0) FROM chunks").fetchone()
    if last_id <= scored_rows:  # no term can match more rows than there are: nothing to plan
        return [Row(*row[1:]) for row in connection.execute(ranked, (_any(terms), count))]
    matches = _bounded_counts(connection, terms, scored_rows)
    present = sorted((t for t in terms if matches[t][0]), key=lambda t: matches[t][0])
    if not present:
        return []
    selective: list[str] = []
    total = 0
    for term in present:
        if total + matches[term][0] > scored_rows:
            break
        selective.append(term)
        total += matches[term][0]
    common = present[len(selective) :]
    if not common:
        return [Row(*row[1:]) for row in connection.execute(ranked, (_any(present), count))]
    pool = max(candidates, count)
    rows: list[tuple[int, str, str, int | None, float]] = []
    if selective:
        rows = connection.execute(ranked, (_any(selective), pool)).fetchall()
    else:
        everything = " AND ".join(_phrase(t) for t in common)
        rows = connection.execute(_UNRANKED_SQL, (everything, pool)).fetchall()
    if len(rows) < count:  # as an OR query would, fill up with chunks holding only common terms
        taken = {row[0] for row in rows}
        more = connection.execute(_UNRANKED_SQL, (_any(common), pool + len(taken))).fetchall()
        rows += [row for row in more if row[0] not in taken][: pool - len(rows)]
    counts = {
        term: (_estimate(*matches[term], scored_rows=scored_rows), matches[term]) for term in common
    }
    shares = _common_shares(connection, rows, counts, tokenizer=tokenizer)
    rescored = sorted(
        (-(score + shares.get(chunk_id, 0.0) * weights[0]), chunk_id, text, title, page)
        for chunk_id, text, title, page, score in rows
    )[:count]
    return [Row(text, title, page, -negative) for negative, _, text, title, page in rescored]


def _estimate(counted: int, stopped: int, *, scored_rows: int) -> float | None:
    """A common term's exact number of matching rows when the bounded count did not stop early,
    else None (it is then scaled from the rowid where the count stopped)."""
    return float(counted) if counted <= scored_rows else None


def _bounded_counts(
    connection: sqlite3.Connection, terms: Sequence[str], limit: int
) -> dict[str, tuple[int, int]]:
    """Each term's (matching rows counted up to ``limit`` + 1, the rowid where counting
    stopped), all in one statement."""
    one = (
        "SELECT count(*), coalesce(max(id), 0) FROM "
        "(SELECT rowid AS id FROM chunks_fts WHERE chunks_fts MATCH ? LIMIT ?)"
    )
    sql = " UNION ALL ".join(f"SELECT {index}, * FROM ({one})" for index in range(len(terms)))
    parameters = [value for term in terms for value in (_phrase(term), limit + 1)]
    counted = {index: (int(n), int(last)) for index, n, last in connection.execute(sql, parameters)}
    return {term: counted[index] for index, term in enumerate(terms)}


def _common_shares(
    connection: sqlite3.Connection,
    rows: Sequence[tuple[int, str, str, int | None, float]],
    common: dict[str, tuple[float | None, tuple[int, int]]],
    *,
    tokenizer: str,
) -> dict[int, float]:
    """Each candidate's BM25 share (``b = 0``) for the common terms, which map to their exact
    match count (or None) and their bounded count ``(counted, stopped at rowid)``."""
    if not rows:
        return {}
    for statement in _TEMP_SCHEMA:
        connection.execute(statement.format(_sql_string(tokenizer)))
    # Two subqueries: together in one SELECT, count(*) and max() would scan the whole table.
    (rows_total, last_id) = connection.execute(
        "SELECT (SELECT count(*) FROM chunks), (SELECT coalesce(max(id), 0) FROM chunks)"
    ).fetchone()
    idf: dict[str, float] = {}
    stems: dict[str, str] = {}
    clear = "INSERT INTO temp.deerflow_candidates(deerflow_candidates) VALUES ('delete-all')"
    connection.execute(clear)
    try:
        for term, (exact, (counted, stopped)) in common.items():
            # Cut short at rowid ``stopped``, the count is scaled to the whole id range.
            estimate = exact if exact is not None else counted * last_id / max(stopped, 1)
            estimate = min(float(rows_total), estimate)
            value = math.log((rows_total - estimate + 0.5) / (estimate + 0.5))
            idf[term] = value if value > 0 else _MIN_IDF
            # The tokenizer's form of the term (Porter stem), read back from a one-word row.
            connection.execute(
                "INSERT INTO temp.deerflow_candidates(rowid, text) VALUES (0, ?)", (term,)
            )
            (stem,) = connection.execute(
                "SELECT term FROM temp.deerflow_candidate_terms WHERE doc = 0"
            ).fetchone() or (term,)
            stems[stem] = term
            connection.execute(clear)
        connection.executemany(
            "INSERT INTO temp.deerflow_candidates(rowid, text) VALUES (?, ?)",
            ((chunk_id, text) for chunk_id, text, *_ in rows),
        )
        marks = ", ".join("?" * len(stems))
        frequencies = connection.execute(
            "SELECT doc, term, count(*) FROM temp.deerflow_candidate_terms "
            f"WHERE term IN ({marks}) GROUP BY doc, term",
            tuple(stems),
        ).fetchall()
    finally:
        connection.execute(clear)
    shares: dict[int, float] = {}
    for chunk_id, stem, frequency in frequencies:
        share = idf[stems[stem]] * frequency * (_K1 + 1) / (frequency + _K1)
        shares[chunk_id] = shares.get(chunk_id, 0.0) + share
    return shares


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
