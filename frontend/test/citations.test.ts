/** Finder behaviour beyond the shared vectors: offsets in code points, streaming, the tree API. */

import { describe, expect, it } from "vitest";

import {
  citationsByOffset,
  citationsInTree,
  findCitations,
  parseMarkdown,
  relabelOrphans,
} from "../src/index.js";

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

  it("has no length limit on labels or destinations (CommonMark has none)", () => {
    expect(findCitations(cite("\u{1F98C}".repeat(5_000)))).toHaveLength(1);
    expect(findCitations(`[citation:a](https://e.co/${"d".repeat(5_000)})`)).toHaveLength(1);
  });

  it("finds the same citations on a tree as on the text, keyed by UTF-16 offset", () => {
    const md = `\u{1F98C} ${cite("a")}\n\n[citation:b][r]\n\n[r]: #knowledge-source-${ID}\n`;
    const tree = parseMarkdown(md);
    expect(citationsInTree(tree, md)).toEqual(findCitations(md));
    const { citations, byOffset } = citationsByOffset(tree, md);
    expect(citations).toEqual(findCitations(md));
    expect([...byOffset.keys()]).toEqual([md.indexOf("[citation:a"), md.indexOf("[citation:b")]);
  });

  it("is not a citation until the closing parenthesis arrives", () => {
    const full = `Deer ${cite("Guide")}.`;
    for (let cut = 0; cut < full.length - 1; cut++) {
      const partial = full.slice(0, cut);
      expect(findCitations(partial)).toEqual([]);
    }
    expect(findCitations(full)).toHaveLength(1);
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
