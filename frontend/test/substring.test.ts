/** The linear substring search: agrees with `indexOf`, and its work is bounded on any input. */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { LinearNeedle, searchWork, startsAt } from "../src/substring.js";

function counted<T>(run: () => T): [T, number] {
  searchWork.examined = 0;
  const out = run();
  return [out, searchWork.examined];
}

describe("LinearNeedle", () => {
  it("finds what indexOf finds", () => {
    const small = fc.string({ unit: fc.constantFrom("a", "b", "\ud83d\ude00"), maxLength: 40 });
    fc.assert(
      fc.property(small, small, (haystack, needle) => {
        expect(new LinearNeedle(needle).indexIn(haystack)).toBe(haystack.indexOf(needle));
      }),
      { numRuns: 2000 },
    );
  });

  it.each([10_000, 100_000, 1_000_000])("examines at most 2(n + m) on a^k b a^(k-1) in a^n (n=%i)", (n) => {
    const needle = "a".repeat(10_000) + "b" + "a".repeat(9_999);
    const haystack = "a".repeat(n);
    const [index, work] = counted(() => new LinearNeedle(needle).indexIn(haystack));
    expect(index).toBe(-1);
    expect(work).toBeLessThanOrEqual(2 * (n + needle.length));
  });

  it("startsAt counts the needle it compares", () => {
    const [hit, work] = counted(() => startsAt("xxabc", "abc", 2));
    expect(hit).toBe(true);
    expect(work).toBe(3);
  });
});
