import { describe, expect, it } from "vitest";

import {
  classifyHref,
  classifyLink,
  isSafeHref,
  safeExternalUrl,
  collectSources,
  createSourceResolver,
  describeSource,
  isToolMessage,
  readEnvelope,
  summarizeCitations,
} from "../src/index.js";
import { readNative } from "../src/native.js";
import {
  ai,
  cite,
  contentFor,
  human,
  nativeRecord,
  nativeToolMessage,
  sharedRecord,
  toolMessage,
} from "./components/fixtures.js";

const a = sharedRecord({ title: "Alpha", excerpt: "Alpha text.", dataset_name: "Docs", page: 2 });
const b = sharedRecord({ title: "Beta", excerpt: "Beta text.", url: "https://beta.example/" });
const hex = "0123456789abcdef0123456789abcdef";

describe("collectSources", () => {
  it("reads shared and native evidence from preceding tool messages only", () => {
    const native = nativeRecord({ id: `${hex}-1`, text: "Native." });
    const messages = [
      human("q"),
      toolMessage([a]),
      nativeToolMessage([native], "task"),
      ai("answer"),
      toolMessage([b]),
      ai("second answer"),
    ];
    const early = collectSources(messages, 3);
    expect(early.get(a.id)?.kind).toBe("shared");
    expect(early.get(`${hex}-1`)?.kind).toBe("native");
    expect(early.get(b.id)).toBeUndefined();
    expect(early.size).toBe(2);
    expect(early.sources().map((source) => source.id)).toEqual([a.id, `${hex}-1`]);
    const late = collectSources(messages, 5);
    expect(late.get(b.id)?.record).toEqual(b);
    expect(collectSources(messages, 1).size).toBe(0);
    expect(collectSources(messages, -4).size).toBe(0);
    expect(collectSources(messages, Number.NaN).size).toBe(0);
    expect(collectSources(messages, 99).size).toBe(3);
    expect(collectSources(messages, Number.POSITIVE_INFINITY).size).toBe(3);
  });

  it("accepts LangGraph list content, retrieval_sources and the dual layout", () => {
    const listContent = toolMessage([a], { content: [{ type: "text", text: contentFor([a]) }, { type: "image_url" }] });
    const native = nativeRecord({ id: `${hex}-2`, text: "Native two." });
    const dual = {
      type: "tool",
      name: "task",
      content: `${contentFor([b])}\n[citation:2](#knowledge-${hex}-2) HR / Doc\nNative two.`,
      artifact: {
        knowledge_sources: { version: 1, sources: [native] },
        knowledge_sources_version: 1,
        retrieval_sources: [b],
      },
    };
    const lookup = collectSources([listContent, dual, ai("x")], 2);
    expect(lookup.get(a.id)).toBeDefined();
    expect(lookup.get(b.id)).toBeDefined();
    expect(lookup.get(`${hex}-2`)).toBeDefined();
  });

  it("keeps the first appearance of an id", () => {
    const first = toolMessage([a]);
    const second = toolMessage([a]);
    const lookup = collectSources([first, second, ai("x")], 2);
    expect(lookup.size).toBe(1);
    const resolver = createSourceResolver();
    expect(resolver.collectSources([first, second], 2).get(a.id)).toBe(
      resolver.evidenceOf(first)?.sources[0],
    );
  });

  it("ignores artifacts on non-tool messages and never throws on junk", () => {
    const envelope = { knowledge_sources_version: 1, knowledge_sources: [a] };
    expect(isToolMessage({ type: "ai", role: "tool" })).toBe(false);
    expect(isToolMessage({ role: "tool" })).toBe(true);
    const hostile = new Proxy(
      { type: "tool" },
      {
        get(target, key) {
          if (key === "type") return "tool";
          throw new Error(`trap ${String(key)}`);
        },
      },
    );
    const messages: unknown[] = [
      null,
      42,
      "tool",
      [],
      hostile,
      human(contentFor([a]), { artifact: envelope }),
      ai(contentFor([a]), { artifact: envelope }),
      { type: "tool", content: contentFor([a]), artifact: { ...envelope, knowledge_sources_version: "1" } },
      ai("x"),
    ];
    const lookup = collectSources(messages, 8);
    expect(lookup.size).toBe(0);
    expect(collectSources("nope" as unknown as unknown[], 1).size).toBe(0);
  });

  it("survives an injected reader that throws", () => {
    const resolver = createSourceResolver({
      readShared: () => {
        throw new Error("boom");
      },
    });
    expect(resolver.collectSources([toolMessage([a]), ai("x")], 1).size).toBe(0);
  });
});

describe("caching", () => {
  function history(total: number, toolEvery: number) {
    const messages: Array<Record<string, unknown>> = [];
    let tools = 0;
    for (let i = 0; messages.length < total - 1; i++) {
      if (i % toolEvery === toolEvery - 1) {
        const record = sharedRecord({ title: `Doc ${i}`, excerpt: `Text ${i}.` });
        messages.push(toolMessage([record]));
        tools += 1;
      } else {
        messages.push(i % 2 === 0 ? human(`q ${i}`) : ai(`a ${i}`));
      }
    }
    return { messages, tools };
  }

  it("validates each tool message at most once over 200 stream updates of a 1,000-message history", () => {
    let validations = 0;
    const resolver = createSourceResolver({
      readShared: (content, artifact) => {
        validations += 1;
        return readEnvelope(content, artifact);
      },
      readNative: (content, artifact, name) => readNative(content, artifact, name),
    });
    const { messages: base, tools } = history(1_000, 5);
    expect(tools).toBe(199);
    let text = "Streaming";
    let previous: ReturnType<typeof resolver.collectSources>[] | null = null;
    for (let update = 0; update < 200; update++) {
      text += ` token${update}`;
      const messages = [...base, ai(text, { id: "streaming" })]; // a new array and a new last message
      // Render every message, as a transcript does.
      const lookups = messages.map((_, index) => resolver.collectSources(messages, index));
      if (update === 0) expect(validations).toBe(0); // verification waits for a lookup
      // The streaming answer's panel counts every source before it: the whole history verified.
      expect(lookups[lookups.length - 1]!.size).toBe(tools);
      expect(validations).toBe(tools);
      if (previous !== null) {
        // Unchanged evidence yields the identical lookup object (memoized children skip work).
        expect(lookups.every((lookup, index) => lookup === previous![index])).toBe(true);
      }
      previous = lookups;
    }
    expect(validations).toBe(tools);
    expect(resolver.stats).toEqual({ validations: tools, indexBuilds: 1, historyScans: 200 });
  });

  it("validates each tool message once when every frame re-parses the history (LangGraph values)", () => {
    let validations = 0;
    const resolver = createSourceResolver({
      readShared: (content, artifact) => {
        validations += 1;
        return readEnvelope(content, artifact);
      },
    });
    const { messages: base, tools } = history(300, 3);
    let text = "Streaming";
    for (let update = 0; update < 100; update++) {
      text += ` token${update}`;
      // Every frame is fresh JSON: new objects for every message, as a values event delivers.
      const messages = JSON.parse(JSON.stringify([...base, ai(text, { id: "streaming" })])) as unknown[];
      expect(resolver.collectSources(messages, messages.length - 1).size).toBe(tools); // verifies all
    }
    expect(validations).toBe(tools);
    expect(resolver.stats.indexBuilds).toBe(1);
  });

  it("never lets a rewritten message under the same id inherit its predecessor's evidence", () => {
    const resolver = createSourceResolver();
    const original = { ...toolMessage([a]), id: "tool-1" };
    expect(resolver.collectSources([original], 1).get(a.id)).toBeDefined();
    const rewritten = { ...original, artifact: { kept: true } }; // e.g. a state write stripped it
    expect(resolver.collectSources([rewritten], 1).get(a.id)).toBeUndefined();
    const forged = { ...original, content: "no handle here" };
    expect(resolver.collectSources([forged], 1).get(a.id)).toBeUndefined();
    // And the original still resolves on its own.
    expect(resolver.collectSources([JSON.parse(JSON.stringify(original))], 1).get(a.id)).toBeDefined();
  });

  it("extends the index when tool messages arrive, and rebuilds without revalidating on a branch switch", () => {
    const resolver = createSourceResolver();
    const t1 = toolMessage([a]);
    const t2 = toolMessage([b]);
    const t3 = toolMessage([sharedRecord({ title: "Branch", excerpt: "Branch text." })]);
    const q = human("q");
    const first = resolver.collectSources([q, t1, ai("x")], 2);
    const grown = [q, t1, ai("x"), t2, ai("y")];
    expect(resolver.collectSources(grown, 2)).toBe(first);
    expect(resolver.collectSources(grown, 4).size).toBe(2);
    expect(resolver.stats.indexBuilds).toBe(1);
    const branch = [q, t1, ai("x"), t3, ai("z")];
    expect(resolver.collectSources(branch, 4).get(b.id)).toBeUndefined();
    expect(resolver.collectSources(branch, 4).size).toBe(2);
    expect(resolver.stats).toMatchObject({ validations: 3, indexBuilds: 2 });
    // Switching back reuses the first branch's index.
    expect(resolver.collectSources([...grown], 4).get(b.id)).toBeDefined();
    expect(resolver.stats).toMatchObject({ validations: 3, indexBuilds: 2 });
  });

  it("rescans an array that was mutated in place", () => {
    const resolver = createSourceResolver();
    const messages: unknown[] = [human("q")];
    expect(resolver.collectSources(messages, 5).size).toBe(0);
    messages.push(toolMessage([a]));
    expect(resolver.collectSources(messages, 5).size).toBe(1);
  });
});

describe("helpers", () => {
  it("classifies links like the citation grammar", () => {
    expect(classifyLink("citation:x", `#knowledge-source-${a.id}`)).toEqual({ kind: "shared", id: a.id });
    expect(classifyLink("Guide", `#user-content-knowledge-source-${a.id}`)).toEqual({ kind: "shared", id: a.id });
    expect(classifyLink("1", `#knowledge-${hex}-12`)).toEqual({ kind: "native", id: `${hex}-12` });
    expect(classifyLink("x", "#knowledge-source-ABC")).toEqual({ kind: "malformed", reason: "bad_source_id" });
    expect(classifyLink("citation:x", undefined)).toEqual({
      kind: "malformed",
      reason: "unsupported_destination",
    });
    expect(classifyLink("citation:x", "https://a.example")).toEqual({ kind: "web", href: "https://a.example" });
    expect(classifyLink("x", "https://a.example")).toEqual({ kind: "link" });
    expect(classifyLink("x", `#knowledge-${hex}-0`)).toEqual({ kind: "link" });
  });

  it("describes shared and native sources with only the locators they carry", () => {
    const lookup = collectSources(
      [toolMessage([a, b]), nativeToolMessage([nativeRecord({ id: `${hex}-3`, text: "N", pages: [4], truncated: true })])],
      2,
    );
    expect(describeSource(lookup.get(a.id)!)).toMatchObject({ title: "Alpha", datasetName: "Docs", pages: [2], url: null });
    expect(describeSource(lookup.get(b.id)!)).toMatchObject({ datasetName: null, pages: [], url: "https://beta.example/" });
    expect(describeSource(lookup.get(`${hex}-3`)!)).toMatchObject({
      provider: "ragflow",
      title: "Employee_Handbook_2026.pdf",
      datasetName: "HR Policies",
      pages: [4],
      url: null,
      truncated: true,
    });
  });

  it("summarizes citations in first-citation order", () => {
    const lookup = collectSources([toolMessage([a, b])], 1);
    const summary = summarizeCitations(
      `${cite(b)} ${cite(a)} ${cite(b)} ${cite({ id: "1".repeat(32) })} [citation:x](#knowledge-source-x) \`${cite(a)}\``,
      lookup,
    );
    expect(summary.sources.map((source) => source.id)).toEqual([b.id, a.id]);
    expect([...summary.numbers]).toEqual([
      [b.id, 1],
      [a.id, 2],
    ]);
    expect(summary.unresolved).toBe(1);
    expect(summary.malformed).toBe(1);
  });
});

describe("href allowlist", () => {
  it.each([
    ["https://example.com", "external"],
    ["http://example.com/a?b=c#d", "external"],
    ["https://[::1]:8443/x", "external"],
    ["mailto:someone@example.com", "mailto"],
    ["#section-2", "fragment"],
    ["#", "fragment"],
  ])("allows %s", (href, kind) => {
    expect(classifyHref(href)).toEqual({ kind, href });
    expect(isSafeHref(href)).toBe(true);
  });

  it.each([
    "javascript:alert(1)",
    "JAVASCRIPT:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "blob:https://example.com/x",
    "//evil.example",
    "/relative/path",
    "relative",
    "HTTPS://example.com",
    "https://user:pass@example.com/",
    "https://exa mple.com/",
    "https://example.com/\\evil",
    "https://example.com/\u0000",
    "#javascript:alert(1)",
    "#a b",
    "mailto:a@b.example?body=<script>",
    "",
    `https://example.com/${"a".repeat(2_100)}`,
  ])("refuses %s", (href) => {
    expect(classifyHref(href)).toBeNull();
    expect(isSafeHref(href)).toBe(false);
  });

  it("refuses non-strings", () => {
    for (const value of [null, undefined, 1, {}, ["https://example.com"]]) {
      expect(classifyHref(value)).toBeNull();
      expect(safeExternalUrl(value)).toBeNull();
    }
  });
});
