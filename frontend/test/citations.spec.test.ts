/**
 * Every CommonMark 0.31.2 spec example (from the `commonmark-spec` package), turned into citation
 * cases: the citations `findCitations` reports must be exactly the links commonmark.js renders,
 * in order, with the same destinations.
 */
import { describe, expect, it } from "vitest";

import { findCitations } from "../src/index.js";
import { SPEC_CASES, normalizeDestination } from "./citations-spec.js";

describe("CommonMark spec examples as citations", () => {
  it("covers the whole spec, links and not-links alike", () => {
    expect(SPEC_CASES).toHaveLength(652);
    expect(SPEC_CASES.filter((c) => c.links.length > 0).length).toBeGreaterThan(90);
  });

  for (const example of SPEC_CASES) {
    it(`example ${example.number} (${example.section})`, () => {
      const found = findCitations(example.markdown).map((c) => ({
        destination: normalizeDestination(c.href),
      }));
      expect(found).toEqual(example.links);
    });
  }
});
