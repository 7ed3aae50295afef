import { describe, expect, it } from "vitest";

import {
  CONTROL_CHARACTERS,
  WHITE_SPACE,
  codePointLength,
  codePointSlice,
  codePointToUtf16Index,
  hasControl,
  hasLoneSurrogate,
  isBlank,
  utf16ToCodePointIndex,
} from "../src/text.js";

const EMOJI = "\u{1F98C}"; // 🦌, a surrogate pair in UTF-16
const HIGH = "\ud83e";
const LOW = "\udd8c";

describe("codePointLength", () => {
  it("counts BMP, astral and combining characters as Python's len does", () => {
    expect(codePointLength("")).toBe(0);
    expect(codePointLength("abc")).toBe(3);
    expect(codePointLength("鹿")).toBe(1);
    expect(codePointLength(EMOJI)).toBe(1);
    expect(EMOJI.length).toBe(2);
    expect(codePointLength(`a${EMOJI}b${EMOJI}`)).toBe(4);
    expect(codePointLength("e\u0301")).toBe(2);
    expect(codePointLength("\u{1F469}\u200D\u{1F4BB}")).toBe(3);
  });

  it("counts a lone surrogate once", () => {
    expect(codePointLength(HIGH)).toBe(1);
    expect(codePointLength(LOW)).toBe(1);
    expect(codePointLength(`${LOW}${HIGH}`)).toBe(2);
    expect(codePointLength(`a${HIGH}`)).toBe(2);
    expect(codePointLength(`${HIGH}${HIGH}${LOW}`)).toBe(2);
  });
});

describe("hasLoneSurrogate", () => {
  it("accepts pairs and rejects unpaired halves anywhere", () => {
    expect(hasLoneSurrogate(`x${EMOJI}y`)).toBe(false);
    expect(hasLoneSurrogate("plain")).toBe(false);
    expect(hasLoneSurrogate(HIGH)).toBe(true);
    expect(hasLoneSurrogate(LOW)).toBe(true);
    expect(hasLoneSurrogate(`${LOW}${HIGH}`)).toBe(true);
    expect(hasLoneSurrogate(`ok${EMOJI}${HIGH}`)).toBe(true);
    expect(hasLoneSurrogate(`${HIGH}${HIGH}${LOW}`)).toBe(true);
  });
});

describe("index conversion and slicing", () => {
  const s = `a${EMOJI}b${HIGH}c`;

  it("maps UTF-16 indices to code-point indices and back", () => {
    expect([0, 1, 3, 4, 5, 6].map((i) => utf16ToCodePointIndex(s, i))).toEqual([0, 1, 2, 3, 4, 5]);
    expect([0, 1, 2, 3, 4, 5].map((i) => codePointToUtf16Index(s, i))).toEqual([0, 1, 3, 4, 5, 6]);
    expect(utf16ToCodePointIndex(s, 2)).toBe(1); // inside the pair: only `a` lies wholly before
    expect(utf16ToCodePointIndex(s, 99)).toBe(5);
    expect(codePointToUtf16Index(s, 99)).toBe(s.length);
  });

  it("slices by code points like Python", () => {
    expect(codePointSlice(s, 1, 2)).toBe(EMOJI);
    expect(codePointSlice(s, 2)).toBe(`b${HIGH}c`);
    expect(codePointSlice(s, 3, 4)).toBe(HIGH);
    expect(codePointSlice(s, 4, 2)).toBe("");
    expect(codePointSlice(`${EMOJI}${EMOJI}`, 1)).toBe(EMOJI);
  });
});

describe("white space and control characters (§1)", () => {
  it("has exactly the listed White_Space code points", () => {
    const expected = [
      0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x20, 0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
      0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000,
    ];
    expect([...WHITE_SPACE].map((c) => c.codePointAt(0)).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(
      expected,
    );
  });

  it("has exactly C0, DEL and C1 as control characters", () => {
    expect(CONTROL_CHARACTERS.size).toBe(0x20 + 0x21);
    expect(CONTROL_CHARACTERS.has("\u0000") && CONTROL_CHARACTERS.has("\u001f") && CONTROL_CHARACTERS.has("\u007f")).toBe(true);
    expect(CONTROL_CHARACTERS.has("\u009f") && !CONTROL_CHARACTERS.has(" ") && !CONTROL_CHARACTERS.has("\u00a0")).toBe(true);
  });

  it("isBlank follows White_Space only", () => {
    expect(isBlank(" \t\n\u3000\u2028\u00a0")).toBe(true);
    expect(isBlank("")).toBe(true);
    expect(isBlank("\u200b")).toBe(false); // ZERO WIDTH SPACE is not White_Space
    expect(isBlank("\u001c")).toBe(false); // an information separator is not White_Space here
    expect(isBlank(` ${EMOJI} `)).toBe(false);
    expect(isBlank(` ${HIGH} `)).toBe(false);
  });

  it("hasControl finds C0, DEL and C1 but not white space beyond them", () => {
    expect(hasControl("a\nb")).toBe(true);
    expect(hasControl("\u007f")).toBe(true);
    expect(hasControl("\u0085")).toBe(true);
    expect(hasControl("a\u00a0b\u2028")).toBe(false);
    expect(hasControl(EMOJI)).toBe(false);
  });
});

describe("applyEdits", () => {
  it("applies sorted edits in one pass and leaves the rest byte-identical", async () => {
    const { applyEdits } = await import("../src/text.js");
    expect(applyEdits("abcdef", [])).toBe("abcdef");
    expect(applyEdits("abcdef", [[0, 1, "X"], [2, 2, "\\"], [4, 6, ""]])).toBe("Xb\\cd");
  });
});
