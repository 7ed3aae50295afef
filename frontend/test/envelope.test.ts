/** Reader behaviour that JSON vectors cannot express: JS-only values, hostile objects, copies. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { RESERVED_KEYS, readEnvelope, sourceId, textParts, type KnowledgeSource } from "../src/index.js";
import { searchWork } from "../src/substring.js";

function record(fields: Omit<KnowledgeSource, "id">): KnowledgeSource {
  return { id: sourceId(fields), ...fields };
}

const deer = record({ provider: "lightrag", title: "guide.md", excerpt: "Deer eat acorns." });
const content = `[citation:guide.md](#knowledge-source-${deer.id})\nDeer eat acorns.`;
const envelope = () => ({ knowledge_sources_version: 1, knowledge_sources: [{ ...deer }] });

describe("readEnvelope", () => {
  it("reads a valid envelope and returns frozen copies", () => {
    const artifact = envelope();
    const result = readEnvelope(content, artifact);
    expect(result).toEqual({ sources: [deer], rejected: [], error: null });
    const [source] = result.sources;
    expect(Object.isFrozen(source)).toBe(true);
    expect(Object.isFrozen(result.sources)).toBe(true);
    (artifact.knowledge_sources[0] as { title: string }).title = "changed";
    expect(source?.title).toBe("guide.md");
  });

  it("exports the three reserved keys", () => {
    expect([...RESERVED_KEYS].sort()).toEqual([
      "knowledge_sources",
      "knowledge_sources_version",
      "retrieval_sources",
    ]);
  });

  it("treats JS-only values as what they are not: JSON", () => {
    const cases: unknown[] = [undefined, null, 1, "x", [], new Map([["knowledge_sources", []]]), () => 1];
    for (const artifact of cases) {
      expect(readEnvelope(content, artifact)).toEqual({ sources: [], rejected: [], error: null });
    }
    const withUndefined = { knowledge_sources_version: 1, knowledge_sources: undefined };
    expect(readEnvelope(content, withUndefined).error).toBe("not_an_array");
    const bigint = { knowledge_sources_version: 1n, knowledge_sources: [{ ...deer }] };
    expect(readEnvelope(content, bigint).error).toBe("bad_version");
  });

  it("rejects records that are not plain data", () => {
    const records: unknown[] = [
      { ...deer, page: 1n },
      { ...deer, page: Number.NaN },
      { ...deer, page: 1.5 },
      { ...deer, url: new String("https://example.com") },
      { ...deer, title: new String("guide.md") },
      { ...deer, dataset_name: undefined },
      Object.assign(Object.create({ provider: "lightrag" }) as object, { id: deer.id, title: deer.title, excerpt: deer.excerpt }),
    ];
    const result = readEnvelope(content, { knowledge_sources_version: 1, knowledge_sources: records });
    expect(result.sources).toEqual([]);
    expect(result.rejected.map((r) => r.reason)).toEqual(records.map(() => "bad_field"));
  });

  it("ignores inherited envelope keys and a polluted prototype", () => {
    const inherited = Object.create({ knowledge_sources_version: 1, knowledge_sources: [{ ...deer }] }) as object;
    expect(readEnvelope(content, inherited)).toEqual({ sources: [], rejected: [], error: null });
    const parsed = JSON.parse(`{"knowledge_sources_version":1,"knowledge_sources":[${JSON.stringify(deer).slice(0, -1)},"__proto__":{"x":1}}]}`) as unknown;
    expect(readEnvelope(content, parsed).rejected).toEqual([{ key: "knowledge_sources", index: 0, reason: "bad_field" }]);
    expect(({} as Record<string, unknown>)["x"]).toBeUndefined();
  });

  it("never throws on throwing getters or proxies", () => {
    const boom = (): never => {
      throw new Error("boom");
    };
    const getterRecord = Object.defineProperty({ ...deer }, "title", { get: boom, enumerable: true });
    const result = readEnvelope(content, { knowledge_sources_version: 1, knowledge_sources: [getterRecord, { ...deer }] });
    expect(result.sources.map((s) => s.id)).toEqual([deer.id]);
    expect(result.rejected).toEqual([{ key: "knowledge_sources", index: 0, reason: "bad_field" }]);

    const trap = new Proxy({}, { get: boom, has: boom, ownKeys: boom, getOwnPropertyDescriptor: boom, getPrototypeOf: boom });
    expect(() => readEnvelope(trap, trap)).not.toThrow();
    expect(readEnvelope(trap, trap).sources).toEqual([]);
    // The reader's own fault has its own code: it is not blamed on the data.
    expect(readEnvelope(trap, trap).error).toBe("internal_error");
    const getterArtifact = Object.defineProperty({ knowledge_sources_version: 1 }, "knowledge_sources", { get: boom, enumerable: true });
    expect(readEnvelope(content, getterArtifact).sources).toEqual([]);
    expect(() => readEnvelope([trap, { type: "text", get text(): string { return boom(); } }], envelope())).not.toThrow();
  });

  it("rejects huge arrays as an envelope fault without reading them", () => {
    const huge = new Array<unknown>(2 ** 31);
    const result = readEnvelope(content, { knowledge_sources_version: 1, knowledge_sources: huge });
    expect(result).toEqual({ sources: [], rejected: [], error: "too_many_records" });
    const sparse = new Array<unknown>(3);
    expect(readEnvelope(content, { knowledge_sources_version: 1, knowledge_sources: sparse }).rejected).toHaveLength(3);
  });

  it("needs handle and excerpt each wholly inside one text part", () => {
    const [head, tail] = [content.slice(0, 30), content.slice(30)];
    const split = readEnvelope([head, tail], envelope());
    expect(split.rejected.map((r) => r.reason)).toEqual(["handle_missing"]);
    const excerptSplit = readEnvelope([`#knowledge-source-${deer.id} Deer eat`, " acorns."], envelope());
    expect(excerptSplit.rejected.map((r) => r.reason)).toEqual(["excerpt_missing"]);
    const separate = readEnvelope([`#knowledge-source-${deer.id}`, { type: "text", text: "Deer eat acorns." }], envelope());
    expect(separate.sources).toHaveLength(1);
  });
});

describe("textParts", () => {
  it("takes strings and text parts only", () => {
    expect(textParts("a")).toEqual(["a"]);
    expect(
      textParts(["a", { type: "text", text: "b" }, { type: "image_url", text: "c" }, { type: "text", text: 1 }, null, 3, ["d"], { text: "e" }]),
    ).toEqual(["a", "b"]);
    expect(textParts({ type: "text", text: "a" })).toEqual([]);
    expect(textParts(null)).toEqual([]);
  });
});

describe("readEnvelope work (issue 12: linear time on hostile excerpts)", () => {
  const many = (excerpt: string, count: number): KnowledgeSource[] =>
    Array.from({ length: count }, (_, i) => record({ provider: "local", title: `t${i}.md`, excerpt }));
  const artifactOf = (records: readonly KnowledgeSource[]) => ({
    knowledge_sources_version: 1,
    knowledge_sources: records.map((r) => ({ ...r })),
  });

  it.each([10_000, 100_000, 1_000_000])("is linear on a^n with 100 records of a^k b a^(k-1) (n=%i)", (n) => {
    // Before: `includes` per record, O(n·m) each in V8 (100 KB took 118 s).
    const records = many("a".repeat(10_000) + "b" + "a".repeat(9_999), 100);
    const text = records.map((r) => `#knowledge-source-${r.id}`).join(" ") + "\n" + "a".repeat(n);
    searchWork.examined = 0;
    const result = readEnvelope(text, artifactOf(records));
    expect(result.sources).toEqual([]);
    expect(result.rejected.map((r) => r.reason)).toEqual(Array(100).fill("excerpt_missing"));
    // One search for the one distinct excerpt, plus a bounded look near each record's handle.
    expect(searchWork.examined).toBeLessThanOrEqual(2 * (text.length + 20_000) + 100 * (4_096 + 20_000));
  });

  it.each([10_000, 100_000, 1_000_000])("never multiplies by handle occurrences (n=%i)", (n) => {
    const [source] = many("x".repeat(20_000), 1) as [KnowledgeSource];
    const handle = `#knowledge-source-${source.id} `;
    const text = handle.repeat(Math.floor(n / handle.length));
    searchWork.examined = 0;
    const result = readEnvelope(text, {
      knowledge_sources_version: 1,
      knowledge_sources: Array.from({ length: 100 }, () => ({ ...source })),
    });
    expect(result.rejected).toHaveLength(100);
    expect(searchWork.examined).toBeLessThanOrEqual(2 * (text.length + 20_000) + 4_096 + 40_000);
  });

  it("finds an excerpt in any part, far from its handle, never across parts", () => {
    const [source] = [record({ provider: "local", title: "t.md", excerpt: "alpha beta" })];
    const handle = `#knowledge-source-${source.id}`;
    const artifact = artifactOf([source]);
    expect(readEnvelope([handle, "xx alpha beta yy"], artifact).sources).toEqual([source]);
    expect(readEnvelope([handle, "alpha", " beta"], artifact).sources).toEqual([]);
    expect(readEnvelope(`${handle}\n${"z".repeat(10_000)}\nalpha beta`, artifact).sources).toEqual([source]);
  });
});

describe("readEnvelope handles (one scan of the content)", () => {
  const source = record({ provider: "local", title: "t.md", excerpt: "alpha beta" });
  const artifact = () => ({ knowledge_sources_version: 1, knowledge_sources: [{ ...source }] });
  // What §3 means by "the handle is in a text part", spelled as a regular expression.
  const DEFINITION = /#knowledge-source-([0-9a-f]{32})/g;
  const hasHandleByDefinition = (text: string): boolean =>
    [...text.matchAll(DEFINITION)].some((match) => match[1] === source.id);

  it("finds a handle exactly where the definition does, among near misses", () => {
    const prefix = "#knowledge-source-";
    const fragment = fc.constantFrom(
      prefix,
      source.id,
      source.id.slice(0, 31),
      source.id.slice(1),
      source.id.toUpperCase(),
      "#",
      "#knowledge-",
      "knowledge-source-",
      "0",
      "f",
      "g",
      "\n",
      " alpha beta ",
    );
    fc.assert(
      fc.property(fc.array(fragment, { maxLength: 12 }), (pieces) => {
        const text = pieces.join("") + "\nalpha beta";
        const [rejection] = readEnvelope(text, artifact()).rejected;
        expect(rejection?.reason !== "handle_missing").toBe(hasHandleByDefinition(text));
      }),
      { numRuns: 2_000 },
    );
  });

  it.each([
    ["the prefix repeated", (n: number) => "#knowledge-source-".repeat(Math.ceil(n / 18)).slice(0, n)],
    ["the prefix and 31 hex digits repeated", (n: number) => `#knowledge-source-${"a".repeat(31)}`.repeat(Math.ceil(n / 49)).slice(0, n)],
    ["handles of 33 hex digits", (n: number) => `#knowledge-source-${"b".repeat(33)}`.repeat(Math.ceil(n / 51)).slice(0, n)],
    ["hex after one prefix", (n: number) => "#knowledge-source-" + "c".repeat(n)],
  ])("examines each character of %s once (10^6 characters)", (_name, make) => {
    const text = make(1_000_000);
    searchWork.examined = 0;
    const result = readEnvelope(text, artifact());
    expect(result.rejected.map((r) => r.reason)).toEqual(["handle_missing"]);
    expect(searchWork.examined).toBeLessThanOrEqual(text.length);
    expect(searchWork.examined).toBeGreaterThanOrEqual(text.length / 2);
  });

  it("takes each id's first handle for the excerpt check", () => {
    const handle = `#knowledge-source-${source.id}`;
    const late = `${handle}\nsomething else\n\n${handle}\nalpha beta`;
    expect(readEnvelope(late, artifact()).sources).toHaveLength(1); // found anywhere, not near
    expect(readEnvelope([`${handle}\n`, `${handle}\nalpha beta`], artifact()).sources).toHaveLength(1);
  });
});
