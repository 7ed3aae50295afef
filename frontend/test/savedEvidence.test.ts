import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { readSavedEvidence, savedEvidenceLookup } from "../src/savedEvidence.js";

const id = `${"cd".repeat(16)}-1`;
const record = {
  id,
  provider: "ragflow",
  dataset_id: "kb",
  document_id: "doc",
  chunk_id: "chunk",
  dataset_name: "Engineering",
  document_name: "Manual.pdf",
  text: "Evidence.",
  pages: [3],
  truncated: false,
};
const report = `See [citation:1](#knowledge-${id}).`;
const payload = { knowledge_sources: { version: 1, sources: [record], omitted_count: 2 } };

describe("readSavedEvidence", () => {
  it("reads DeerFlow's payload, also after a JSON round trip", () => {
    for (const value of [payload, JSON.parse(JSON.stringify(payload)) as unknown]) {
      const result = readSavedEvidence(report, value);
      expect(result.error).toBeNull();
      expect(result.evidence?.omittedCount).toBe(2);
      expect(result.evidence?.sources.map((s) => s.id)).toEqual([id]);
    }
    expect(savedEvidenceLookup(report, payload).get(id)?.kind).toBe("native");
  });

  it("rejects the whole evidence for one broken rule and never mixes in other sources", () => {
    const twice = { knowledge_sources: { ...payload.knowledge_sources, sources: [record, record] } };
    expect(readSavedEvidence(report, twice)).toEqual({ evidence: null, error: "duplicate", index: 1 });
    expect(savedEvidenceLookup(report, twice).size).toBe(0);
    expect(readSavedEvidence("no citation", payload).error).toBe("not_cited");
  });

  it("never throws on hostile payloads", () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), fc.jsonValue(), (sources, version, omitted) => {
        const result = readSavedEvidence(report, {
          knowledge_sources: { version, sources, omitted_count: omitted },
        });
        expect(result.evidence === null).toBe(result.error !== null);
      }),
      { numRuns: 300 },
    );
    const cyclic: Record<string, unknown> = { version: 1, sources: [], omitted_count: 0 };
    cyclic["self"] = cyclic;
    expect(readSavedEvidence(report, { knowledge_sources: cyclic }).error).toBe("not_an_object");
  });
});
