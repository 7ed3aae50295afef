/** Field rules of §1 at their code-point limits, where UTF-16 length and code points differ. */

import { describe, expect, it } from "vitest";

import {
  MAX_EXCERPT_CHARS,
  MAX_TITLE_CHARS,
  MAX_URL_CHARS,
  isValidExcerpt,
  isValidTitle,
  isValidUrl,
} from "../src/contract.js";

const ASTRAL = "\u{1F98C}"; // one code point, two UTF-16 units

describe("lengths in code points (counted only when UTF-16 length cannot decide)", () => {
  it.each([
    ["title", isValidTitle, MAX_TITLE_CHARS],
    ["excerpt", isValidExcerpt, MAX_EXCERPT_CHARS],
  ] as const)("%s: max code points in max+1 … 2·max units is valid, max+1 is not", (_name, check, max) => {
    expect(check("a".repeat(max))).toBe(true);
    expect(check("a".repeat(max + 1))).toBe(false);
    expect(check("a".repeat(max - 1) + ASTRAL)).toBe(true); // max + 1 units
    expect(check("a".repeat(max) + ASTRAL)).toBe(false); // max + 2 units, max + 1 code points
    expect(check(ASTRAL.repeat(max))).toBe(true); // exactly 2·max units
    expect(check(ASTRAL.repeat(max) + "a")).toBe(false);
  });

  it("url: the same limits", () => {
    const base = "https://e.example/";
    expect(isValidUrl(base + "a".repeat(MAX_URL_CHARS - base.length))).toBe(true);
    expect(isValidUrl(base + "a".repeat(MAX_URL_CHARS - base.length + 1))).toBe(false);
    expect(isValidUrl(base + "a".repeat(MAX_URL_CHARS - base.length - 1) + ASTRAL)).toBe(true);
    expect(isValidUrl(base + "a".repeat(MAX_URL_CHARS - base.length) + ASTRAL)).toBe(false);
  });

  it("title: a control character or a lone surrogate anywhere is one rule, each still enforced", () => {
    expect(isValidTitle("ok\u0085")).toBe(false);
    expect(isValidTitle("ok\ud800")).toBe(false);
    expect(isValidTitle(`ok${ASTRAL}`)).toBe(true);
    expect(isValidExcerpt("line\nbreak")).toBe(true);
    expect(isValidExcerpt("lone \udc00")).toBe(false);
  });
});
