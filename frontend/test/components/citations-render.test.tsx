// @vitest-environment jsdom
/**
 * The render path agrees with `findCitations`: KnowledgeMarkdown draws a chip, web link or inert
 * label for exactly the citations `findCitations` reports, in the same order, and numbers chips
 * in that order — on every CommonMark spec example turned into citation cases and on hand-made
 * messages mixing reference links, code, HTML and autolinks.
 */
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import {
  KnowledgeMarkdown,
  MAX_MARKDOWN_CHARS,
  findCitations,
  sourceLookupFrom,
  summarizeCitations,
  type Citation,
  type ResolvedSource,
  type SourceLookup,
} from "../../src/index.js";
import { SPEC_CASES } from "../citations-spec.js";
import { sharedRecord } from "./fixtures.js";

afterEach(cleanup);

/** What the page shows for each citation, in document order. */
function rendered(container: HTMLElement): string[] {
  return [...container.querySelectorAll(".dk-chip, a.dk-web-citation, [data-dk-reason]")].map((el) => {
    if (el.classList.contains("dk-chip")) return `chip ${el.getAttribute("data-dk-number") ?? ""}`;
    if (el.matches("a.dk-web-citation")) return "web";
    return el.getAttribute("data-dk-reason") ?? "";
  });
}

/** What findCitations says the page must show. */
function expected(citations: readonly Citation[], lookup: SourceLookup): string[] {
  const numbers = summarizeCitations(citations, lookup).numbers;
  return citations.map((citation) => {
    if (citation.kind === "web") return "web";
    if (citation.kind === "malformed") return citation.reason ?? "";
    const number = numbers.get(citation.source_id as string);
    return number === undefined ? "evidence_not_loaded" : `chip ${number}`;
  });
}

const EMPTY = sourceLookupFrom([]);

describe("KnowledgeMarkdown renders exactly the citations findCitations finds", () => {
  describe("every CommonMark spec example", () => {
    for (const example of SPEC_CASES) {
      it(`example ${example.number}`, () => {
        const { container } = render(<KnowledgeMarkdown markdown={example.markdown} sources={EMPTY} />);
        expect(rendered(container)).toEqual(expected(findCitations(example.markdown), EMPTY));
      });
    }
  });

  const a = sharedRecord({ title: "Alpha", excerpt: "alpha text" });
  const b = sharedRecord({ title: "Beta", excerpt: "beta text" });
  const c = sharedRecord({ title: "Gamma", excerpt: "gamma text" });
  const lookup = sourceLookupFrom(
    [a, b, c].map((record): ResolvedSource => ({ kind: "shared", id: record.id, record })),
  );
  const handle = (record: { id: string }) => `#knowledge-source-${record.id}`;
  const missing = "f".repeat(32);

  const messages: Record<string, string> = {
    "reference links, first definition wins": [
      `See [citation:B][b] and [citation:A][] then [citation:C].`,
      ``,
      `[b]: ${handle(b)} "title"`,
      `[citation:A]: <${handle(a)}>`,
      `[citation:c]: ${handle(c)}`,
      `[citation:c]: ${handle(a)}`,
    ].join("\n"),
    "code, HTML and autolinks are not citations": [
      `[citation:A](${handle(a)}) and \`[citation:B](${handle(b)})\``,
      ``,
      `    [citation:C](${handle(c)})`,
      ``,
      `<div>`,
      `[citation:B](${handle(b)})`,
      `</div>`,
      ``,
      `<a href="${handle(b)}">x</a> <${handle(c).slice(1)}:x> [citation:C](${handle(c)})`,
    ].join("\n"),
    "images hide their links, escapes and entities decode": [
      `![[citation:A](${handle(a)})](x.png) [citation:B](${handle(b).replace("-", "&#45;")})`,
      `[citation:A](<${handle(a)}> "t") [citation:x](${handle(a)}\\)) [citation:m](#knowledge-source-nope)`,
      `[citation:missing](#knowledge-source-${missing}) [citation:w](https://example.com)`,
    ].join("\n"),
    "nested brackets: the innermost link wins": `[x [citation:C](${handle(c)}) y](${handle(a)}) [citation:A](${handle(a)})`,
    // Past MAX_NESTING_DEPTH the markers are text for both: code and HTML there stay what the
    // capped text makes them, on screen as in findCitations.
    "past 32 nested quotes and list items": [
      `[citation:A](${handle(a)})`,
      ``,
      `${">".repeat(33)}     [citation:B](${handle(b)})`,
      ``,
      `${"> ".repeat(33)}\`\`\``,
      `${"> ".repeat(33)}[citation:C](${handle(c)})`,
      `${"> ".repeat(33)}\`\`\``,
      ``,
      `${"- ".repeat(33)}<div>`,
      `${"  ".repeat(33)}[citation:A](${handle(a)})`,
      ``,
      `${"1. ".repeat(34)}    [citation:B](${handle(b)})`,
      ``,
      `${">".repeat(40)} [citation:C](${handle(c)})`,
    ].join("\n"),
  };

  for (const [name, markdown] of Object.entries(messages)) {
    it(name, () => {
      const { container } = render(<KnowledgeMarkdown markdown={markdown} sources={lookup} />);
      const found = findCitations(markdown);
      expect(found.length).toBeGreaterThan(1);
      expect(rendered(container)).toEqual(expected(found, lookup));
    });
  }

  it("past MAX_MARKDOWN_CHARS the message is text, on screen as in findCitations", () => {
    const line = `Deer [citation:A](${handle(a)}) *x*\n`;
    const markdown = line.repeat(Math.ceil(MAX_MARKDOWN_CHARS / line.length) + 10);
    const { container } = render(<KnowledgeMarkdown markdown={markdown} sources={lookup} />);
    const found = findCitations(markdown);
    expect(found.length).toBeLessThan(markdown.split("\n").length - 1);
    expect(rendered(container)).toEqual(expected(found, lookup));
    expect(container.textContent).toContain(`[citation:A](${handle(a)})`);
  });

  it("numbers reference-link chips in document order", () => {
    const { container } = render(<KnowledgeMarkdown markdown={messages["reference links, first definition wins"]!} sources={lookup} />);
    expect(rendered(container)).toEqual(["chip 1", "chip 2", "chip 3"]);
    expect(container.querySelectorAll(".dk-chip")[0]?.textContent).toBe("Beta");
  });
});
