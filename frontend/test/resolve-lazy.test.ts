/**
 * The resolver verifies a thread's tool messages lazily: in order, and only as far as a lookup
 * needs. These tests pin the cost (validations counted by an injected reader) and that the lazy
 * answers are exactly the eager ones (an eager reference written here).
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  createSourceResolver,
  readEnvelope,
  type KnowledgeSource,
  type ResolvedSource,
  type SourceLookup,
  type SourceResolver,
} from "../src/index.js";
import { ai, cite, human, nativeRecord, nativeToolMessage, sharedRecord, toolMessage } from "./components/fixtures.js";

const hex = "0123456789abcdef0123456789abcdef";

/** A resolver whose shared reader counts its calls, per `artifact` object and in total. */
function counted(): { resolver: SourceResolver; perArtifact: Map<unknown, number>; total: () => number } {
  const perArtifact = new Map<unknown, number>();
  let total = 0;
  const resolver = createSourceResolver({
    readShared: (content, artifact) => {
      total += 1;
      perArtifact.set(artifact, (perArtifact.get(artifact) ?? 0) + 1);
      return readEnvelope(content, artifact);
    },
  });
  return { resolver, perArtifact, total: () => total };
}

/**
 * The eager algorithm the resolver had before it verified lazily: every tool message before
 * `beforeIndex` verified, in order, first appearance of an id wins.
 */
function eagerReference(evidence: SourceResolver, messages: readonly unknown[], beforeIndex: number) {
  const byId = new Map<string, ResolvedSource>();
  for (const message of messages.slice(0, Math.max(0, beforeIndex))) {
    for (const source of evidence.evidenceOf(message)?.sources ?? []) {
      if (!byId.has(source.id)) byId.set(source.id, source);
    }
  }
  return byId;
}

const plain = (source: ResolvedSource | undefined) =>
  source === undefined ? undefined : { kind: source.kind, id: source.id, record: source.record };

/** A DeerFlow-like thread: `turns` turns whose searches all return the same `records`. */
function sameSearchThread(turns: number, records: readonly KnowledgeSource[]) {
  const messages: Array<Record<string, unknown>> = [];
  for (let turn = 0; turn < turns; turn++) {
    messages.push(
      human(`question ${turn}`),
      ai(""),
      toolMessage(records),
      ai(`Answer ${turn} ${records.map((record) => cite(record)).join(" ")}`),
    );
  }
  return messages;
}

const six = [0, 1, 2, 3, 4, 5].map((k) => sharedRecord({ title: `Doc ${k}`, excerpt: `Text ${k}.` }));

describe("lazy verification", () => {
  it("resolves citations of the first search of a 50-search thread with one validation, not 50", () => {
    const { resolver, total } = counted();
    const messages = sameSearchThread(50, six);
    // Every answer's lookup, as a transcript draws them, and every citation in it.
    for (let index = 3; index < messages.length; index += 4) {
      const lookup = resolver.collectSources(messages, index);
      for (const record of six) expect(lookup.get(record.id)?.record).toEqual(record);
    }
    expect(total()).toBe(1);
    expect(resolver.stats.validations).toBe(1);
  });

  it("verifies the whole prefix on a miss, once, and answers undefined", () => {
    const { resolver, total } = counted();
    const messages = sameSearchThread(50, six);
    const lookup = resolver.collectSources(messages, messages.length);
    expect(lookup.get(six[0]!.id)).toBeDefined();
    expect(total()).toBe(1);
    const unknown = "f".repeat(32);
    expect(lookup.get(unknown)).toBeUndefined();
    expect(total()).toBe(50);
    expect(lookup.get(unknown)).toBeUndefined();
    expect(resolver.collectSources(messages, 10).get(unknown)).toBeUndefined();
    expect(total()).toBe(50); // each tool message validated once, whatever is asked next
    // A miss in a shorter view verifies that view only.
    const fresh = counted();
    expect(fresh.resolver.collectSources(messages, 4 * 10).get(unknown)).toBeUndefined();
    expect(fresh.total()).toBe(10);
  });

  describe("first appearance wins in lazy order", () => {
    // Ten tool messages; the same native id in messages 3 and 7 with different evidence.
    const id = `${hex}-1`;
    function thread() {
      return Array.from({ length: 10 }, (_, k) =>
        k === 3 || k === 7
          ? nativeToolMessage([nativeRecord({ id, text: `Evidence of message ${k}.` })])
          : toolMessage([sharedRecord({ title: `Filler ${k}`, excerpt: `Filler text ${k}.` })]),
      );
    }
    const text = (source: ResolvedSource | undefined) =>
      source?.kind === "native" ? source.record.text : undefined;

    it("from a view over 10 after a view over 5", () => {
      const { resolver, total } = counted();
      const messages = thread();
      const small = resolver.collectSources(messages, 5).get(id);
      expect(text(small)).toBe("Evidence of message 3.");
      expect(total()).toBe(4);
      const big = resolver.collectSources(messages, 10).get(id);
      expect(big).toBe(small);
      expect(total()).toBe(4);
      expect(resolver.collectSources(messages, 3).get(id)).toBeUndefined(); // not yet carried
    });

    it("when the first view used is the big one", () => {
      const { resolver, total } = counted();
      const messages = thread();
      const big = resolver.collectSources(messages, 10).get(id);
      expect(text(big)).toBe("Evidence of message 3.");
      expect(total()).toBe(4); // messages 0-3 only: message 7 is never read
      expect(resolver.collectSources(messages, 5).get(id)).toBe(big);
      expect(resolver.collectSources(messages, 3).get(id)).toBeUndefined();
      expect(resolver.collectSources(messages, 10).size).toBe(9);
      expect(resolver.collectSources(messages, 10).get(id)).toBe(big); // still message 3's
      expect(total()).toBe(10);
    });

    it("when an earlier copy of the id is forged", () => {
      const { resolver, total } = counted();
      const genuine = sharedRecord({ title: "Genuine", excerpt: "Genuine text." });
      const other = sharedRecord({ title: "Other", excerpt: "Other text." });
      // Claims the genuine id for another record's fields: the recomputed id differs.
      const forged = toolMessage([{ ...other, id: genuine.id }]);
      const messages = [toolMessage([other]), forged, toolMessage([genuine]), toolMessage([genuine])];
      const found = resolver.collectSources(messages, 4).get(genuine.id);
      expect(found?.record).toEqual(genuine);
      expect(total()).toBe(3);
      expect(resolver.collectSources(messages, 2).get(genuine.id)).toBeUndefined();
    });
  });

  it("answers size and sources() exactly as the eager resolver, in any order of views", () => {
    const messages = [
      ...sameSearchThread(3, six.slice(0, 3)),
      toolMessage([six[2]!, six[4]!]),
      toolMessage([six[5]!], { content: "no handle here" }), // fails verification
      nativeToolMessage([nativeRecord({ id: `${hex}-1`, text: "One." })]),
      ai("x"),
      nativeToolMessage([nativeRecord({ id: `${hex}-1`, text: "One, later." })]),
      toolMessage([six[0]!, six[5]!]),
    ];
    const reference = createSourceResolver();
    for (const order of ["ascending", "descending", "get first"]) {
      const { resolver, total } = counted();
      const counts = messages.map((_, index) => index + 1);
      if (order === "descending") counts.reverse();
      if (order === "get first") {
        expect(resolver.collectSources(messages, messages.length).get(six[1]!.id)).toBeDefined();
      }
      const before = total();
      for (const count of counts) {
        const eager = [...eagerReference(reference, messages, count).values()].map(plain);
        const lookup = resolver.collectSources(messages, count);
        expect(lookup.size).toBe(eager.length);
        expect(lookup.sources().map(plain)).toEqual(eager);
        expect(lookup.sources()).toBe(lookup.sources());
      }
      if (order === "get first") expect(before).toBe(1);
      expect(total()).toBe(8); // every tool message, once
    }
  });

  it("keeps its index whole when an injected reader re-enters the resolver mid-verification", () => {
    const messages = [toolMessage([six[0]!]), toolMessage([six[1]!, six[0]!]), toolMessage([six[2]!])];
    let entered = false;
    const resolver: SourceResolver = createSourceResolver({
      readShared: (content, artifact) => {
        if (!entered) {
          entered = true;
          expect(resolver.collectSources(messages, 3).size).toBe(3); // verifies everything, inside
        }
        return readEnvelope(content, artifact);
      },
    });
    const lookup = resolver.collectSources(messages, 3);
    expect(lookup.get(six[2]!.id)?.record).toEqual(six[2]);
    expect(lookup.size).toBe(3);
    expect(lookup.sources().map((source) => source.id)).toEqual([six[0]!.id, six[1]!.id, six[2]!.id]);
    expect(resolver.collectSources(messages, 1).size).toBe(1);
    expect(resolver.collectSources(messages, 2).size).toBe(2);
    expect(resolver.collectSources(messages, 1).get(six[0]!.id)).toBe(resolver.evidenceOf(messages[0])?.sources[0]);
  });

  it("10,000 tool messages, 100,000 lookups of an id of the first: 1 validation, O(lookups) probes", () => {
    const first = sharedRecord({ title: "First", excerpt: "First text." });
    const pool = Array.from({ length: 8 }, (_, k) => sharedRecord({ title: `Pool ${k}`, excerpt: `Pool ${k}.` }));
    const messages = [toolMessage([first]), ...Array.from({ length: 9_999 }, (_, k) => toolMessage([pool[k % 8]!]))];
    const { resolver, total } = counted();
    const lookups = 100_000;
    const get = Map.prototype.get;
    const has = Map.prototype.has;
    let probes = 0;
    let found = 0;
    Map.prototype.get = function (this: Map<unknown, unknown>, key: unknown) {
      probes += 1;
      return get.call(this, key);
    };
    Map.prototype.has = function (this: Map<unknown, unknown>, key: unknown) {
      probes += 1;
      return has.call(this, key);
    };
    try {
      for (let n = 0; n < lookups; n++) {
        // Views over every length of the thread, as a long transcript draws its answers.
        if (resolver.collectSources(messages, 1 + (n % messages.length)).get(first.id) !== undefined) found += 1;
      }
    } finally {
      Map.prototype.get = get;
      Map.prototype.has = has;
    }
    expect(found).toBe(lookups);
    expect(total()).toBe(1);
    expect(resolver.stats.validations).toBe(1);
    // Per lookup: the view cache, the id's position (plus the one scan and validation, amortized).
    expect(probes).toBeLessThanOrEqual(3 * lookups);
  });
});

// ---------------------------------------------------------------------------------------------
// Property: lazy answers equal the eager reference; no message is validated twice; the work done
// is bounded by what the queries needed.

const sharedPool = [0, 1, 2, 3].map((k) => sharedRecord({ title: `P${k}`, excerpt: `Pool text ${k}.` }));
const nativeIds = [1, 2].map((n) => `${hex}-${n}`);
const ids = [...sharedPool.map((record) => record.id), ...nativeIds, "e".repeat(32), `${hex}-9`];

type ToolSpec =
  | { readonly kind: "shared"; readonly picks: readonly number[] }
  | { readonly kind: "native"; readonly picks: readonly number[]; readonly variant: number }
  | { readonly kind: "noHandle"; readonly picks: readonly number[] }
  | { readonly kind: "wrongId"; readonly from: number; readonly to: number }
  | { readonly kind: "copy"; readonly of: number } // a re-parsed copy of an earlier tool message
  | { readonly kind: "rewrite"; readonly of: number; readonly picks: readonly number[] }; // same id, new content

const picks = fc.uniqueArray(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 3 });
const toolSpec: fc.Arbitrary<ToolSpec> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant("shared" as const), picks }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant("native" as const),
      picks: fc.uniqueArray(fc.integer({ min: 0, max: 1 }), { minLength: 1, maxLength: 2 }),
      variant: fc.integer({ min: 0, max: 2 }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("noHandle" as const), picks }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant("wrongId" as const),
      from: fc.integer({ min: 0, max: 3 }),
      to: fc.integer({ min: 0, max: 3 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant("copy" as const), of: fc.nat() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant("rewrite" as const), of: fc.nat(), picks }) },
);

function buildThread(specs: readonly ToolSpec[]): Array<Record<string, unknown>> {
  const tools: Array<Record<string, unknown>> = [];
  const messages: Array<Record<string, unknown>> = [];
  const fresh = (spec: ToolSpec): Record<string, unknown> => {
    switch (spec.kind) {
      case "shared":
        return toolMessage(spec.picks.map((k) => sharedPool[k]!));
      case "native":
        return nativeToolMessage(
          spec.picks.map((k) => nativeRecord({ id: nativeIds[k]!, text: `Native ${k} variant ${spec.variant}.` })),
        );
      case "noHandle":
        return toolMessage(spec.picks.map((k) => sharedPool[k]!), { content: "no handle here" });
      case "wrongId": {
        const claimed = { ...sharedPool[spec.from]!, id: sharedPool[spec.to]!.id };
        return toolMessage([claimed]);
      }
      default:
        return toolMessage([sharedPool[0]!]);
    }
  };
  for (const spec of specs) {
    let message: Record<string, unknown>;
    if ((spec.kind === "copy" || spec.kind === "rewrite") && tools.length > 0) {
      const earlier = tools[spec.of % tools.length]!;
      message =
        spec.kind === "copy"
          ? (JSON.parse(JSON.stringify(earlier)) as Record<string, unknown>)
          : { ...fresh({ kind: "shared", picks: spec.picks }), id: earlier["id"] };
    } else {
      message = fresh(spec);
    }
    tools.push(message);
    messages.push(message, ai("answer"));
  }
  return messages;
}

type Query =
  | { readonly frame: number; readonly before: number; readonly op: "get"; readonly id: number }
  | { readonly frame: number; readonly before: number; readonly op: "size" | "sources" };

const query: fc.Arbitrary<Query> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      frame: fc.integer({ min: 0, max: 1 }),
      before: fc.nat({ max: 40 }),
      op: fc.constant("get" as const),
      id: fc.integer({ min: 0, max: ids.length - 1 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      frame: fc.integer({ min: 0, max: 1 }),
      before: fc.nat({ max: 40 }),
      op: fc.constantFrom("size" as const, "sources" as const),
    }),
  },
);

describe("lazy verification (property)", () => {
  it("answers as the eager reference, validates each message at most once, and no more than needed", () => {
    fc.assert(
      fc.property(fc.array(toolSpec, { maxLength: 16 }), fc.array(query, { maxLength: 30 }), (specs, queries) => {
        const messages = buildThread(specs);
        // The second frame is the same history re-parsed, as a LangGraph `values` event delivers it.
        const frames = [messages, JSON.parse(JSON.stringify(messages)) as Array<Record<string, unknown>>];
        const { resolver, perArtifact, total } = counted();
        const reference = createSourceResolver();
        const views = new Map<string, SourceLookup>();
        const needed = [0, 0]; // per frame: how many of its tool messages the queries needed
        for (const q of queries) {
          const frame = frames[q.frame]!;
          const lookup = resolver.collectSources(frame, q.before);
          const key = `${q.frame}:${Math.min(q.before, frame.length)}`;
          const earlier = views.get(key);
          if (earlier !== undefined) expect(lookup).toBe(earlier); // one view object per prefix
          views.set(key, lookup);
          const eager = eagerReference(reference, frame, q.before);
          const toolsBefore = frame.slice(0, Math.max(0, q.before)).filter((m) => m["type"] === "tool");
          if (q.op === "get") {
            const id = ids[q.id]!;
            expect(plain(lookup.get(id))).toEqual(plain(eager.get(id)));
            const carrier = toolsBefore.findIndex((m) =>
              reference.evidenceOf(m)?.sources.some((source) => source.id === id),
            );
            needed[q.frame] = Math.max(needed[q.frame]!, carrier < 0 ? toolsBefore.length : carrier + 1);
          } else {
            const expected = [...eager.values()].map(plain);
            if (q.op === "size") expect(lookup.size).toBe(expected.length);
            else expect(lookup.sources().map(plain)).toEqual(expected);
            needed[q.frame] = Math.max(needed[q.frame]!, toolsBefore.length);
          }
          for (const count of perArtifact.values()) expect(count).toBe(1);
          expect(total()).toBeLessThanOrEqual(needed[0]! + needed[1]!);
        }
        expect(resolver.stats.validations).toBe(total());
      }),
      { numRuns: 300 },
    );
  });
});
