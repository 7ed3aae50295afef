/** visibleText: each invisible format character spelled out, nothing else touched (§8). */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { INVISIBLE_FORMAT_RANGES, visibleText } from "../src/visible.js";

const invisible = (cp: number): boolean => INVISIBLE_FORMAT_RANGES.some(([low, high]) => low <= cp && cp <= high);
const spell = (cp: number): string => `<U+${cp.toString(16).toUpperCase().padStart(4, "0")}>`;

describe("visibleText", () => {
  it("spells out the RLO spoof", () => {
    expect(visibleText("invoice_\u202efdp.exe.md")).toBe("invoice_<U+202E>fdp.exe.md");
  });

  it("matches the oracle on any string, astral and lone surrogates included", () => {
    const near = fc.oneof(
      fc.constantFrom(...INVISIBLE_FORMAT_RANGES.flatMap(([low, high]) => [low - 1, low, high, high + 1])),
      fc.integer({ min: 0, max: 0x10ffff }),
    );
    const text = fc.array(near, { maxLength: 30 }).map((cps) =>
      cps.map((cp) => (cp >= 0xd800 && cp <= 0xdfff ? "\ud800" : String.fromCodePoint(cp))).join(""),
    );
    fc.assert(
      fc.property(text, (s) => {
        const expected = [...s].map((ch) => (invisible(ch.codePointAt(0)!) ? spell(ch.codePointAt(0)!) : ch)).join("");
        expect(visibleText(s)).toBe(expected);
        expect(visibleText(expected)).toBe(expected);
      }),
      { numRuns: 2000 },
    );
  });
});
