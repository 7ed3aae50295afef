/** Property tests: the reader and the scanner never throw, and what they return re-verifies. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  codePointLength,
  codePointSlice,
  findCitations,
  readEnvelope,
  relabelOrphans,
  sourceId,
  textParts,
  validateRecordFields,
  type KnowledgeSource,
  type ReadResult,
} from "../src/index.js";

const RUNS = { numRuns: 300 } as const;

/** Code points with the interesting ones over-represented, lone surrogates included. */
const unit = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom("a", "Z", "7", " ", "鹿", "\u{1F98C}", "e\u0301") },
  { weight: 2, arbitrary: fc.constantFrom("\n", "\t", "\u3000", "\u2028", "\u200b", "\u0085", "\u0001") },
  { weight: 1, arbitrary: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", minLength: 1, maxLength: 1 }) },
);
const text = (maxLength = 12) => fc.string({ unit, minLength: 0, maxLength });

const validRecord: fc.Arbitrary<KnowledgeSource> = fc
  .record(
    {
      provider: fc.constantFrom("lightrag", "ragflow", "local", "a.b-c_d"),
      title: text(8),
      excerpt: text(16),
      dataset_name: text(8),
      url: fc.constantFrom("https://example.com/a?b#c", "http://[::1]:8080/x", "https://鹿.example/\u{1F98C}"),
      page: fc.integer({ min: 1, max: 1_000_000 }),
    },
    { requiredKeys: ["provider", "title", "excerpt"] },
  )
  .map((identity) => ({ id: "", ...identity }))
  .filter((record) => validateRecordFields({ ...record, id: "0".repeat(32) }))
  .map((record) => ({ ...record, id: sourceId(record) }));

function contentFor(records: readonly KnowledgeSource[], asList: boolean): string | unknown[] {
  const parts = records.map((r) => `[citation:${r.title}](#knowledge-source-${r.id})\n${r.excerpt}`);
  return asList ? parts.map((part) => ({ type: "text", text: part })) : parts.join("\n\n");
}

/** Every returned source must be a valid, self-verifying record visible in the content. */
function expectVerified(content: unknown, result: ReadResult): void {
  const parts = textParts(content);
  const ids = new Set<string>();
  for (const source of result.sources) {
    expect(validateRecordFields(source)).toBe(true);
    expect(sourceId(source)).toBe(source.id);
    expect(parts.some((part) => part.includes(`#knowledge-source-${source.id}`))).toBe(true);
    expect(parts.some((part) => part.includes(source.excerpt))).toBe(true);
    expect(Object.isFrozen(source)).toBe(true);
    expect(ids.has(source.id)).toBe(false);
    ids.add(source.id);
  }
  if (result.error !== null) {
    expect(result.sources).toHaveLength(0);
    expect(result.rejected).toHaveLength(0);
  }
}

type Mutation = (artifact: Record<string, unknown>, records: unknown[]) => void;

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.constant<Mutation>((a) => delete a["knowledge_sources_version"]),
  fc.jsonValue().map<Mutation>((v) => (a) => void (a["knowledge_sources_version"] = v)),
  fc.jsonValue().map<Mutation>((v) => (a) => void (a["knowledge_sources"] = v)),
  fc.jsonValue().map<Mutation>((v) => (a) => void (a["retrieval_sources"] = v)),
  fc.constant<Mutation>((a) => {
    a["retrieval_sources"] = a["knowledge_sources"];
    a["knowledge_sources"] = { version: 1, sources: [] };
  }),
  fc.constant<Mutation>((_, r) => void r.push(...r)),
  fc.constant<Mutation>((_, r) => void r.reverse()),
  fc
    .tuple(fc.nat(), fc.constantFrom("id", "provider", "title", "excerpt", "dataset_name", "url", "page", "x", "__proto__"), fc.jsonValue())
    .map<Mutation>(([i, key, v]) => (_, r) => {
      const target = r[i % Math.max(1, r.length)];
      if (typeof target === "object" && target !== null) {
        Object.defineProperty(target, key, { value: v, enumerable: true, configurable: true, writable: true });
      }
    }),
  fc.tuple(fc.nat(), fc.constantFrom("id", "title", "excerpt", "page")).map<Mutation>(([i, key]) => (_, r) => {
    const target = r[i % Math.max(1, r.length)];
    if (typeof target === "object" && target !== null) delete (target as Record<string, unknown>)[key];
  }),
  fc.tuple(fc.nat(), fc.anything()).map<Mutation>(([i, v]) => (_, r) => void (r[i % Math.max(1, r.length)] = v)),
);

describe("readEnvelope", () => {
  it("never throws on arbitrary values", () => {
    fc.assert(
      fc.property(fc.anything(), fc.anything(), (content, artifact) => {
        expectVerified(content, readEnvelope(content, artifact));
      }),
      RUNS,
    );
  });

  it("never throws on arbitrary JSON, with or without envelope keys", () => {
    const artifact = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          knowledge_sources_version: fc.oneof(fc.constant(1), fc.jsonValue()),
          knowledge_sources: fc.jsonValue(),
          retrieval_sources: fc.jsonValue(),
        },
        { requiredKeys: [] },
      ),
    );
    fc.assert(
      fc.property(fc.jsonValue(), artifact, (content, a) => {
        expectVerified(content, readEnvelope(content, a));
      }),
      RUNS,
    );
  });

  it("accepts every record of a valid envelope, in order (string or list content)", () => {
    fc.assert(
      fc.property(fc.uniqueArray(validRecord, { maxLength: 6, selector: (r) => r.id }), fc.boolean(), (records, asList) => {
        const content = contentFor(records, asList);
        const result = readEnvelope(content, { knowledge_sources_version: 1, knowledge_sources: records });
        expect(result.error).toBeNull();
        expect(result.rejected).toEqual([]);
        expect(result.sources.map((s) => s.id)).toEqual(records.map((r) => r.id));
        expect(result.sources).toEqual(records);
      }),
      RUNS,
    );
  });

  it("never throws on mutated valid envelopes, and what it returns re-verifies", () => {
    fc.assert(
      fc.property(
        fc.array(validRecord, { maxLength: 5 }),
        fc.boolean(),
        fc.array(mutation, { maxLength: 4 }),
        fc.array(fc.nat(), { maxLength: 3 }),
        (records, asList, mutations, dropParts) => {
          const copies: unknown[] = records.map((r) => ({ ...r }));
          const artifact: Record<string, unknown> = { knowledge_sources_version: 1, knowledge_sources: copies, other: 1 };
          for (const mutate of mutations) mutate(artifact, copies);
          let content = contentFor(records, asList);
          if (Array.isArray(content)) content = content.filter((_, i) => !dropParts.includes(i));
          const result = readEnvelope(content, artifact);
          expectVerified(content, result);
          expect(artifact["other"]).toBe(1);
        },
      ),
      RUNS,
    );
  });
});

describe("findCitations", () => {
  const markdownUnit = fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom("[", "]", "(", ")", "!", "\\", "`", "```", "~~~", "\n", "\r\n", " ", "citation:") },
    { weight: 2, arbitrary: fc.constantFrom("#knowledge-source-0123456789abcdef0123456789abcdef", "https://x.y", "#knowledge-0123456789abcdef0123456789abcdef-7") },
    { weight: 2, arbitrary: unit },
  );
  const markdown = fc.oneof(fc.string(), fc.string({ unit: markdownUnit, maxLength: 60 }));

  it("never throws; spans are in bounds, ordered and spell out the link", () => {
    fc.assert(
      fc.property(markdown, (md) => {
        const citations = findCitations(md);
        const length = codePointLength(md);
        let previousEnd = 0;
        for (const c of citations) {
          expect(c.start).toBeGreaterThanOrEqual(previousEnd);
          expect(c.end).toBeGreaterThan(c.start);
          expect(c.end).toBeLessThanOrEqual(length);
          expect(codePointSlice(md, c.start, c.end)).toBe(`[${c.raw_label}](${c.href})`);
          previousEnd = c.end;
        }
        const kept = citations.flatMap((c) => (c.source_id === null ? [] : [c.source_id]));
        expect(relabelOrphans(md, kept)).toBe(md);
      }),
      { numRuns: 1000 },
    );
  });

  it("never throws on non-string input", () => {
    fc.assert(
      fc.property(fc.anything(), (value) => {
        expect(findCitations(value as string)).toEqual([]);
      }),
      RUNS,
    );
  });
});
