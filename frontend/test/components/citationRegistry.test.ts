/**
 * The per-message citation registry's shared chip descriptions: one element per distinct
 * description, in first-claim order, and linear work however many sources a message cites.
 */
import { describe, expect, it } from "vitest";

import { CitationRegistry } from "../../src/components/citationRegistry.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "../../src/components/labels.js";
import { sourceLookupFrom, type ResolvedSource } from "../../src/lookup.js";

function source(n: number, fields: { dataset_name?: string; page?: number } = {}): ResolvedSource {
  const id = n.toString(16).padStart(32, "0");
  return Object.freeze({
    kind: "shared",
    id,
    record: { id, provider: "local", title: `Doc ${n}`, excerpt: `Excerpt ${n}.`, ...fields },
  }) as ResolvedSource;
}

/** Labels that count how often a description is composed (each reads `dataset` once). */
function countingLabels(): { labels: KnowledgeLabels; reads: () => number } {
  let reads = 0;
  const labels = new Proxy(DEFAULT_LABELS, {
    get(target, key, receiver) {
      if (key === "dataset") reads += 1;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { labels, reads: () => reads };
}

describe("CitationRegistry descriptions", () => {
  it("give chips that read alike one element, in first-claim order, and follow new evidence", () => {
    const sources = [source(1, { page: 2 }), source(2), source(3, { page: 2 }), source(4, { dataset_name: "Docs" })];
    const registry = new CitationRegistry(sourceLookupFrom(sources), DEFAULT_LABELS, "m");
    for (const id of [sources[1]!.id, sources[0]!.id, sources[2]!.id, sources[3]!.id, "f".repeat(32)]) registry.claim(id);
    expect(registry.descriptions()).toEqual([
      ["m-0", "local"],
      ["m-1", "local, Page 2"],
      ["m-2", "local, Dataset: Docs"],
    ]);
    expect(registry.descriptions()).toBe(registry.descriptions()); // a stable snapshot
    expect(registry.viewOf(sources[2]!.id).split("\u0000")[2]).toBe("m-1");
    expect(registry.viewOf("f".repeat(32))).toBe("\u0000\u0000"); // unverified: no description
    // New evidence renumbers and describes afresh, in the same claim order.
    registry.update(sourceLookupFrom([sources[0]!, sources[3]!]), DEFAULT_LABELS);
    expect(registry.descriptions()).toEqual([
      ["m-0", "local, Page 2"],
      ["m-1", "local, Dataset: Docs"],
    ]);
  });

  it("composes each source's description once, however many times chips ask (counted)", () => {
    for (const n of [1_000, 20_000]) {
      const sources = Array.from({ length: n }, (_, k) => source(k + 1, { dataset_name: `Set ${k % 7}` }));
      const { labels, reads } = countingLabels();
      const registry = new CitationRegistry(sourceLookupFrom(sources), labels, "m");
      for (const item of sources) {
        registry.claim(item.id);
        registry.viewOf(item.id); // what each chip reads as it renders
        registry.viewOf(sources[0]!.id);
      }
      expect(reads()).toBe(n);
      expect(registry.descriptions()).toHaveLength(7);
    }
  });
});
