import { describe, expect, it } from "vitest";

import { MAX_MEMO_CHARS, MAX_MEMO_ENTRIES, citationsOf } from "../src/citationMemo.js";
import { findCitations } from "../src/citations.js";

const id = "0123456789abcdef0123456789abcdef";
const text = (n: number): string => `Fact ${n} [citation:A](#knowledge-source-${id}) \`[x](#knowledge-source-bad)\``;

describe("citationsOf", () => {
  it("finds what findCitations finds, frozen, and the same array for the same string", () => {
    const first = citationsOf(text(1));
    expect(first).toEqual(findCitations(text(1)));
    expect(Object.isFrozen(first)).toBe(true);
    expect(citationsOf(text(1))).toBe(first);
  });

  it(`remembers at most ${MAX_MEMO_ENTRIES} strings, forgetting the oldest`, () => {
    const oldest = citationsOf("oldest [citation:A](#knowledge-source-" + id + ")");
    for (let n = 0; n < MAX_MEMO_ENTRIES - 1; n++) citationsOf(text(n + 10));
    expect(citationsOf("oldest [citation:A](#knowledge-source-" + id + ")")).toBe(oldest); // at the limit
    for (let n = 0; n < MAX_MEMO_ENTRIES; n++) citationsOf(text(n + 100_000));
    expect(citationsOf("oldest [citation:A](#knowledge-source-" + id + ")")).not.toBe(oldest); // past it
    // 4,097 full parses: a count, not a timing, so a loaded machine gets more than the default 5 s.
  }, 60_000);

  it("does not keep Markdown longer than the limit", () => {
    const long = `${"a".repeat(MAX_MEMO_CHARS)} [citation:A](#knowledge-source-${id})`;
    expect(citationsOf(long)).toEqual(findCitations(long));
    expect(citationsOf(long)).not.toBe(citationsOf(long));
  });
});
