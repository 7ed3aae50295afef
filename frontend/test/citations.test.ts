/** Scanner behaviour beyond the shared vectors: offsets in code points, limits, hostile input. */

import { describe, expect, it } from "vitest";

import { MAX_DESTINATION_CHARS, MAX_LABEL_CHARS, findCitations, relabelOrphans } from "../src/index.js";

const ID = "0123456789abcdef0123456789abcdef";
const cite = (title: string, id = ID) => `[citation:${title}](#knowledge-source-${id})`;

describe("findCitations", () => {
  it("reports offsets in code points, not UTF-16 units", () => {
    const md = `\u{1F98C}\u{1F98C} ${cite("鹿\u{1F98C}")} x`;
    const [citation] = findCitations(md);
    expect(citation?.start).toBe(3);
    expect(citation?.end).toBe(3 + [...cite("鹿\u{1F98C}")].length);
    expect(citation?.label).toBe("鹿\u{1F98C}");
  });

  it("counts the label limit in code points", () => {
    const atLimit = "\u{1F98C}".repeat(MAX_LABEL_CHARS - "citation:".length);
    expect(findCitations(cite(atLimit))).toHaveLength(1);
    expect(findCitations(cite(`${atLimit}x`))).toHaveLength(0);
  });

  it("counts the destination limit in code points", () => {
    const path = (n: number) => `https://e.co/${"\u{1F98C}".repeat(n - "https://e.co/".length)}`;
    expect(findCitations(`[citation:a](${path(MAX_DESTINATION_CHARS)})`)).toHaveLength(1);
    expect(findCitations(`[citation:a](${path(MAX_DESTINATION_CHARS + 1)})`)).toHaveLength(0);
  });

  it("is not a citation until the closing parenthesis arrives", () => {
    const full = `Deer ${cite("Guide")}.`;
    for (let cut = 0; cut < full.length - 1; cut++) {
      const partial = full.slice(0, cut);
      expect(findCitations(partial)).toEqual([]);
    }
    expect(findCitations(full)).toHaveLength(1);
  });

  it("stays linear on hostile input", () => {
    const hostile = [
      "[".repeat(200_000),
      "[a](".repeat(50_000),
      "`".repeat(1_000) + "``x".repeat(20_000),
      "![".repeat(50_000) + "](x)".repeat(50_000),
      `${"[".repeat(20_000)}${cite("x")}${"]".repeat(20_000)}`,
    ];
    const started = performance.now();
    for (const md of hostile) findCitations(md);
    expect(performance.now() - started).toBeLessThan(5_000);
  });
});

describe("relabelOrphans", () => {
  it("replaces only shared citations whose id is not kept", () => {
    const other = "f".repeat(32);
    const md = `a ${cite("Kept")} b ${cite("Gone", other)} c [citation:W](https://x.y) \`${cite("code", other)}\``;
    expect(relabelOrphans(md, [ID])).toBe(
      `a ${cite("Kept")} b Gone c [citation:W](https://x.y) \`${cite("code", other)}\``,
    );
    expect(relabelOrphans(md, new Set([ID, other]))).toBe(md);
  });

  it("keeps astral characters around the replacement intact", () => {
    const md = `\u{1F98C}${cite("\u{1F98C}")}\u{1F98C}`;
    expect(relabelOrphans(md, [])).toBe("\u{1F98C}\u{1F98C}\u{1F98C}");
  });
});
