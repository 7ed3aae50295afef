"""RAGFlow's answers, parsed: plain JSON in, typed values and a :class:`RAGFlowResult` out.

Pure: no I/O, no httpx. :mod:`deerflow.knowledge.providers.ragflow` sends the requests; this module
decides what RAGFlow's ``{"code", "message", "data"}`` envelopes mean — the data, or the
:mod:`~deerflow.knowledge.providers.errors` exception naming whose fault a failure is — and how
a chunk becomes a hit:

* A chunk's title is its ``document_keyword``, else the ``doc_aggs`` name for its
  ``document_id``, else nothing (unattributed: shown, never cited).
* A page comes only from a ``positions`` row ``[page, left, right, top, bottom]`` that describes
  a real box (TXT, DOCX and Markdown chunks carry fake rows built from the chunk ordinal).
* A chunk naming a dataset outside the searched scope is dropped: scope admission is
  authoritative. RAGFlow has no document URL, so none is ever built.
* Similarities from different embedding groups are not comparable: :func:`merge_groups`
  interleaves groups by rank and drops scores when more than one group answered.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from deerflow.knowledge._provider_errors import (
    UpstreamAuthError,
    UpstreamError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
)
from deerflow.knowledge._provider_settings import RAGFLOW
from deerflow.knowledge._redaction import redact
from deerflow.knowledge.contract import RetrievalHit, RetrievalResult
from deerflow.knowledge.native import has_native_locators
from deerflow.knowledge.providers.parse._reply import NOT_JSON, chunk_contents, error_detail
from deerflow.knowledge.rules import MAX_PAGE, MIN_PAGE
from deerflow.knowledge.text import is_blank, replace_lone_surrogates

__all__ = [
    "DATASET_ID_MARKER",
    "KNOWLEDGE_GRAPH_DOCUMENT",
    "PROVIDER_NAME",
    "DatasetUnavailableError",
    "RAGFlowChunk",
    "RAGFlowDataset",
    "RAGFlowReply",
    "RAGFlowResult",
    "embedding_groups",
    "merge_groups",
    "real_pages",
    "scrub_ids",
]

logger = logging.getLogger("deerflow.knowledge.providers.ragflow")

PROVIDER_NAME: Final = RAGFLOW
#: ``document_keyword`` of RAGFlow's knowledge-graph pseudo-chunk (``use_kg``): not a document.
KNOWLEDGE_GRAPH_DOCUMENT: Final = "Related content in Knowledge Graph"
DATASET_ID_MARKER: Final = "[DATASET_ID]"
#: At most this many ``positions`` rows of a chunk are read for pages.
_MAX_POSITION_ROWS: Final = 100

_ID_TOKEN_RE = re.compile(
    r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{32}|[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-"
    r"[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12})(?![0-9A-Za-z])"
)
_EMBEDDING_MISMATCH = (
    "Datasets use different embedding models",
    "Cannot search across datasets",
)
_NO_ACCESS = "You don't own the dataset"

_T = TypeVar("_T")


class DatasetUnavailableError(UpstreamError):
    """A configured dataset did not resolve, or the key can access no dataset at all."""


@dataclass(frozen=True, slots=True)
class RAGFlowDataset:
    """A resolved dataset: only what grouping and naming need."""

    id: str
    name: str
    embedding_model: str | None
    chunk_count: int | None


class RAGFlowChunk(BaseModel):
    """The provider evidence behind one hit: what a native record needs, and nothing invented.

    ``document_name`` is the document's real name (``document_keyword`` or the ``doc_aggs`` name)
    or None; ``dataset_name`` is set only when the chunk's dataset is in the resolved scope.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    text: str
    chunk_id: str | None = None
    dataset_id: str | None = None
    document_id: str | None = None
    document_name: str | None = None
    dataset_name: str | None = None
    pages: tuple[int, ...] = ()

    @property
    def has_locators(self) -> bool:
        """True when DeerFlow's native snapshot can describe this chunk without inventing anything."""
        return has_native_locators(
            dataset_name=self.dataset_name,
            dataset_id=self.dataset_id,
            document_id=self.document_id,
            chunk_id=self.chunk_id,
        )


class RAGFlowResult(RetrievalResult):
    """A :class:`RetrievalResult` whose hits carry their RAGFlow evidence (``chunks[i]`` ↔ ``hits[i]``)."""

    chunks: tuple[RAGFlowChunk, ...] = ()

    @model_validator(mode="after")
    def _parallel(self) -> RAGFlowResult:
        if len(self.chunks) != len(self.hits):
            raise ValueError("chunks and hits must be parallel")
        return self


def real_pages(positions: object) -> tuple[int, ...]:
    """Sorted unique pages of the ``positions`` rows that describe a real box.

    A row is ``[page, left, right, top, bottom]``; it is page evidence only when left < right and
    top < bottom. Non-PDF parsers write ``[i+1, i, i, i, i]`` from the chunk ordinal, which is no
    page at all.
    """
    if not isinstance(positions, list):
        return ()
    pages: set[int] = set()
    for row in positions[:_MAX_POSITION_ROWS]:
        if not isinstance(row, list) or len(row) != 5:
            continue
        if not all(type(value) in (int, float) and math.isfinite(value) for value in row):
            continue
        page, left, right, top, bottom = row
        if not (left < right and top < bottom) or float(page) != int(page):
            continue
        if MIN_PAGE <= int(page) <= MAX_PAGE:  # the record's page bound
            pages.add(int(page))
    return tuple(sorted(pages))


def merge_groups(
    query: str, answers: Sequence[Sequence[tuple[RetrievalHit, RAGFlowChunk]]], page_size: int
) -> RAGFlowResult:
    """One result from the embedding groups' answers: interleaved by rank up to ``page_size``;
    scores kept only when at most one group answered (different embedding spaces)."""
    merged = _interleave(answers, page_size)
    keep_scores = len(answers) <= 1
    hits = tuple(
        hit if keep_scores else hit.model_copy(update={"score": None}) for hit, _ in merged
    )
    chunks = tuple(chunk for _, chunk in merged)
    return RAGFlowResult(provider=PROVIDER_NAME, query=query, hits=hits, chunks=chunks)


class RAGFlowReply:
    """Parses the answers of one RAGFlow server: what error messages need (its base URL) and the
    secrets to redact from everything that leaves."""

    def __init__(self, base_url: str, secrets: Iterable[str]) -> None:
        self._base_url = base_url
        self._secrets = tuple(secrets)

    def data(self, status: int, body: object, expected: type[Any]) -> Any:
        """``data`` of a successful envelope (``code == 0``), else the matching error."""
        kwargs: dict[str, Any] = {"provider": PROVIDER_NAME, "status_code": status}
        if not isinstance(body, Mapping):
            if status == 401:
                raise UpstreamAuthError(
                    "RAGFlow rejected the API key (HTTP 401); check api_key.", **kwargs
                )
            if status == 404:
                raise self.not_found(status)
            if 500 <= status <= 599:
                raise UpstreamServerError(
                    f"RAGFlow failed (HTTP {status}); check the RAGFlow server and any proxy in "
                    "front of it, then try again.",
                    **kwargs,
                )
            if status != 200:
                raise UpstreamRejectedError(
                    f"RAGFlow refused the request (HTTP {status}).", **kwargs
                )
            raise self.shape_error(
                "returned invalid JSON" if body is NOT_JSON else "returned a non-object JSON body"
            )
        code = body.get("code")
        detail = self.detail(body)
        suffix = f": {detail}" if detail else ""
        if status == 401 or code in (109, 401) or (code == 0 and body.get("data") is False):
            raise UpstreamAuthError(
                f"RAGFlow rejected the API key (HTTP {status}, code {code}{suffix}); check api_key.",
                **kwargs,
            )
        if status == 404:
            raise self.not_found(status)
        if type(code) is int and code == 0 and status == 200:
            data = body.get("data")
            if not isinstance(data, expected):
                raise self.shape_error("returned a success without the expected data")
            return data
        if type(code) is int and code != 0:
            if code == 102 and detail and detail.startswith(_NO_ACCESS):
                raise UpstreamAuthError(
                    f"RAGFlow denied access to a dataset (code 102{suffix}); check the datasets "
                    "setting and the API key's tenant.",
                    **kwargs,
                )
            if code == 102 and detail and detail.startswith(_EMBEDDING_MISMATCH):
                raise UpstreamRejectedError(
                    f"RAGFlow refused to search datasets with different embedding models together "
                    f"(code 102{suffix}).",
                    **kwargs,
                )
            if code == 108:
                raise UpstreamAuthError(
                    f"RAGFlow denied permission (code 108{suffix}); check the API key.", **kwargs
                )
            if code == 100 or 500 <= status <= 599:
                raise UpstreamServerError(
                    f"RAGFlow failed internally (code {code}{suffix}); check the RAGFlow server "
                    "log, then try again.",
                    **kwargs,
                )
            raise UpstreamRejectedError(
                f"RAGFlow rejected the request (code {code}{suffix}).", **kwargs
            )
        if 500 <= status <= 599:
            raise UpstreamServerError(f"RAGFlow failed (HTTP {status}{suffix}).", **kwargs)
        raise self.shape_error(f"answered HTTP {status} without a usable code")

    def detail(self, body: Mapping[str, Any]) -> str | None:
        detail = error_detail(body, self._secrets)
        return None if detail is None else scrub_ids(detail)

    def not_found(self, status: int) -> UpstreamNotFoundError:
        return UpstreamNotFoundError(
            f"RAGFlow endpoint not found at {self._base_url} (HTTP {status}); check base_url (the "
            "RAGFlow API server, e.g. http://host:9380, or its web entry) and that the server runs "
            "the Python API (not the Go-only mode).",
            provider=PROVIDER_NAME,
            status_code=status,
        )

    def shape_error(self, what: str) -> UpstreamResponseError:
        return UpstreamResponseError(
            f"RAGFlow {what}; is {self._base_url} a RAGFlow API server?",
            provider=PROVIDER_NAME,
            status_code=200,
        )

    def dataset(self, item: Mapping[str, Any]) -> RAGFlowDataset:
        dataset_id = item.get("id")
        if not isinstance(dataset_id, str) or not dataset_id:
            raise self.shape_error("listed a dataset without an id")
        name = item.get("name")
        model = item.get("embedding_model")
        count = item.get("chunk_count")
        return RAGFlowDataset(
            id=dataset_id,
            name=name if isinstance(name, str) else "",
            embedding_model=model if isinstance(model, str) and model else None,
            chunk_count=count if type(count) is int else None,
        )

    def chunks(
        self, data: Mapping[str, Any], scope: Mapping[str, RAGFlowDataset]
    ) -> list[tuple[RetrievalHit, RAGFlowChunk]]:
        chunks = data.get("chunks", [])
        if not isinstance(chunks, list):
            raise self.shape_error("returned data without a chunks list")
        names = _document_names(data.get("doc_aggs"))
        secrets = self._secrets
        hits: list[tuple[RetrievalHit, RAGFlowChunk]] = []
        outside = 0
        for raw, content in chunk_contents(chunks, self.shape_error):
            text = _normalize_text(redact(content, secrets))
            if not text:
                continue
            raw_dataset = raw.get("dataset_id")
            if _outside(raw_dataset, scope):
                outside += 1
                continue  # scope admission is authoritative: neither shown nor cited
            dataset_id = raw_dataset if isinstance(raw_dataset, str) else None
            document_id = _string(raw.get("document_id"))
            keyword = _string(raw.get("document_keyword"))
            graph = isinstance(raw_dataset, list) or (
                not document_id and keyword == KNOWLEDGE_GRAPH_DOCUMENT
            )
            document_name: str | None = None
            if not graph:
                if keyword is not None and not is_blank(keyword):
                    document_name = keyword
                elif document_id:
                    document_name = names.get(document_id)
            dataset = scope.get(dataset_id) if dataset_id is not None else None
            dataset_name = dataset.name if dataset is not None else None
            pages = real_pages(raw.get("positions"))
            score = _score(raw.get("similarity"))
            clean = _redactor(secrets)
            chunk = RAGFlowChunk(
                text=text,
                chunk_id=clean(_string(raw.get("id"))),
                dataset_id=clean(dataset_id),
                document_id=clean(document_id),
                document_name=clean(document_name),
                dataset_name=clean(dataset_name),
                pages=pages,
            )
            hit = RetrievalHit(
                text=text,
                title=chunk.document_name,
                dataset_name=chunk.dataset_name or None,
                page=pages[0] if pages else None,
                score=score,
            )
            hits.append((hit, chunk))
        if outside:
            logger.warning("RAGFlow returned %d chunk(s) outside the searched datasets.", outside)
        return hits


# --------------------------------------------------------------------------- helpers


def _outside(dataset_id: object, scope: Mapping[str, RAGFlowDataset]) -> bool:
    """True when a chunk names a dataset the request did not search (a string id, or any id of a
    knowledge-graph chunk's list). A chunk naming no dataset is not known to be outside."""
    if isinstance(dataset_id, str):
        return dataset_id not in scope
    if isinstance(dataset_id, list):
        return any(not isinstance(item, str) or item not in scope for item in dataset_id)
    return False


def scrub_ids(text: str) -> str:
    return _ID_TOKEN_RE.sub(DATASET_ID_MARKER, text)


def _score(value: object) -> float | None:
    """``similarity`` as given (it can exceed 1 with pagerank or tag features), if a number."""
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _string(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _redactor(secrets: tuple[str, ...]) -> Callable[[str | None], str | None]:
    def clean(value: str | None) -> str | None:
        return None if value is None else redact(value, secrets)

    return clean


def _normalize_text(text: str) -> str:
    """Chunk content as shown: newlines unified, lone surrogates replaced, outer space stripped."""
    text = replace_lone_surrogates(text.replace("\r\n", "\n").replace("\r", "\n"))
    return text.strip()


def _document_names(doc_aggs: object) -> dict[str, str]:
    """``doc_id`` → ``doc_name`` from ``doc_aggs`` (a list; ``{}`` on RAGFlow's early-success paths)."""
    names: dict[str, str] = {}
    items: Iterable[object] = doc_aggs if isinstance(doc_aggs, list) else ()
    for item in items:
        if not isinstance(item, Mapping):
            continue
        doc_id, doc_name = item.get("doc_id"), item.get("doc_name")
        if isinstance(doc_id, str) and isinstance(doc_name, str) and not is_blank(doc_name):
            names.setdefault(doc_id, doc_name)
    return names


def embedding_groups(datasets: Iterable[RAGFlowDataset]) -> list[list[RAGFlowDataset]]:
    groups: dict[str, list[RAGFlowDataset]] = {}
    for dataset in datasets:
        if dataset.chunk_count == 0:
            continue  # nothing to search; RAGFlow may not even have an embedding model for it
        if dataset.embedding_model is None:
            raise UpstreamResponseError(
                "RAGFlow listed a dataset with chunks but no embedding_model; cannot search it.",
                provider=PROVIDER_NAME,
                status_code=200,
            )
        groups.setdefault(dataset.embedding_model, []).append(dataset)
    return [groups[model] for model in sorted(groups)]


def _interleave(answers: Sequence[Sequence[_T]], limit: int) -> list[_T]:
    """Rank 0 of every group in group order, then rank 1, …, until ``limit`` items."""
    merged: list[_T] = []
    rank = 0
    while len(merged) < limit and any(rank < len(answer) for answer in answers):
        for answer in answers:
            if rank < len(answer) and len(merged) < limit:
                merged.append(answer[rank])
        rank += 1
    return merged
