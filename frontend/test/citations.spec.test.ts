/**
 * Every CommonMark 0.31.2 spec example (from the `commonmark-spec` package), turned into citation
 * cases: the citations `findCitations` reports must be exactly the links commonmark.js renders,
 * in order, with the same destinations.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { findCitations } from "../src/index.js";
import { SPEC_CASES, asCitationCase, normalizeDestination, oracleLinks } from "./citations-spec.js";

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

describe("random Markdown as citations", () => {
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom("[", "]", "(", ")", "![", "\\", "`", "\n", "\n\n", " ", "a", "*", "_") },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        "#knowledge-source-0123456789abcdef0123456789abcdef",
        "https://e.x/p",
        "<",
        ">",
        '"t"',
        "&amp;",
        "&#91;",
        "    ",
        "> ",
        "- ",
        "```",
        "[r]: ",
        "[r]",
        "<span>",
        "</span>",
      ),
    },
  );

  it("finds exactly the links commonmark.js renders", () => {
    fc.assert(
      fc.property(fc.array(token, { maxLength: 40 }), (tokens) => {
        const markdown = asCitationCase(tokens.join(""));
        const found = findCitations(markdown).map((c) => ({ destination: normalizeDestination(c.href) }));
        expect(found).toEqual(oracleLinks(markdown));
      }),
      { numRuns: 1_000 },
    );
  }, 120_000);
});
