"""The pure RAGFlow parser, fed SYNTHETIC API-shaped bodies directly (no HTTP client).

RAGFlow cannot run here: the bodies come from the builders in ``test_providers_ragflow`` (shaped
like RAGFlow v0.26's retrieval API), so the parser and the client see the same data.
"""

from __future__ import annotations

import pytest

from deerflow.knowledge.contract import RetrievalHit
from deerflow.knowledge.providers.errors import (
    UpstreamAuthError,
    UpstreamNotFoundError,
    UpstreamRejectedError,
    UpstreamResponseError,
    UpstreamServerError,
)
from deerflow.knowledge.providers.parse.ragflow import (
    RAGFlowChunk,
    RAGFlowDataset,
    RAGFlowReply,
    embedding_groups,
    merge_groups,
)
from tests.test_providers_ragflow import (
    DATASETS,
    DOC_HANDBOOK,
    DS_ENG,
    DS_HR,
    DS_LEGAL,
    MODEL_A,
    MODEL_B,
    chunk,
    kg_chunk,
    retrieval_data,
)

BASE = "http://ragflow.test:9380"
SECRET = "ragflow-SECRETMARKER0c9d8e7f6a5b4c3d2e1f0a9b"
REPLY = RAGFlowReply(BASE, [SECRET])
SCOPE = {
    DS_HR: RAGFlowDataset(id=DS_HR, name="HR Policies", embedding_model=MODEL_A, chunk_count=3)
}


def test_a_retrieval_answer_becomes_hits_and_evidence() -> None:
    data = retrieval_data([chunk("c1", "Accrued leave: 25 days.")])
    [(hit, evidence)] = REPLY.chunks(data, SCOPE)
    assert hit.text == "Accrued leave: 25 days." and hit.title == "Employee_Handbook_2026.pdf"
    assert hit.dataset_name == "HR Policies" and hit.page == 14 and hit.score == 0.84888
    assert evidence.chunk_id == "c1" and evidence.document_id == DOC_HANDBOOK
    assert evidence.has_locators


def test_chunks_outside_the_scope_and_graph_chunks_are_not_documents() -> None:
    data = retrieval_data(
        [chunk("c1", "outside", dataset_id=DS_ENG), kg_chunk([DS_HR]), chunk("c2", "in")]
    )
    pairs = REPLY.chunks(data, SCOPE)
    assert [hit.text for hit, _ in pairs] == [kg_chunk([DS_HR])["content"], "in"]
    assert pairs[0][0].title is None and not pairs[0][1].has_locators


def test_the_api_key_is_redacted_from_parsed_text() -> None:
    [(hit, _)] = REPLY.chunks(retrieval_data([chunk("c1", f"key {SECRET} here")]), SCOPE)
    assert SECRET not in hit.text and "[REDACTED]" in hit.text


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (200, {"code": 109, "message": "Authentication error"}, UpstreamAuthError),
        (404, "<html/>", UpstreamNotFoundError),
        (
            200,
            {"code": 102, "message": "Datasets use different embedding models."},
            UpstreamRejectedError,
        ),
        (200, {"code": 100, "message": "boom"}, UpstreamServerError),
        (200, {"code": 0, "data": "not a list"}, UpstreamResponseError),
    ],
)
def test_envelopes_become_typed_errors(status: int, body: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        REPLY.data(status, body, list)


def test_a_successful_envelope_yields_its_data() -> None:
    assert REPLY.data(200, {"code": 0, "data": [DATASETS[DS_HR]]}, list) == [DATASETS[DS_HR]]
    assert REPLY.dataset(DATASETS[DS_LEGAL]).embedding_model == MODEL_B


def test_groups_are_merged_by_rank_and_scores_dropped_across_groups() -> None:
    def pair(text: str) -> tuple[RetrievalHit, RAGFlowChunk]:
        return RetrievalHit(text=text, score=0.5), RAGFlowChunk(text=text)

    groups = embedding_groups(REPLY.dataset(DATASETS[d]) for d in (DS_LEGAL, DS_HR, DS_ENG))
    assert [[d.id for d in group] for group in groups] == [[DS_HR, DS_ENG], [DS_LEGAL]]
    one = merge_groups("q", [[pair("a1"), pair("a2")]], 8)
    assert [hit.score for hit in one.hits] == [0.5, 0.5]
    two = merge_groups("q", [[pair("a1"), pair("a2")], [pair("b1")]], 2)
    assert [hit.text for hit in two.hits] == ["a1", "b1"]
    assert [hit.score for hit in two.hits] == [None, None]
    assert [c.text for c in two.chunks] == ["a1", "b1"]
