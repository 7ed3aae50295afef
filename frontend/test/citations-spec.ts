/**
 * The CommonMark 0.31.2 spec examples as citation cases, with commonmark.js (the reference
 * implementation, independent of micromark) as the oracle. Shared by the spec test and the
 * render test.
 *
 * Every `[` becomes `[citation:`: every link label (and, consistently, every definition label
 * and reference) then starts with `citation:`, so by the §4 table every link CommonMark renders
 * is a citation (web, malformed or shared) and nothing else may be.
 */
import { Parser, type Node } from "commonmark";
import spec, { type SpecExample } from "commonmark-spec";
import { encode } from "mdurl";

export interface OracleLink {
  /** The destination as commonmark.js renders it (decoded, then percent-encoded). */
  readonly destination: string;
}

export interface SpecCase {
  readonly number: number;
  readonly section: string;
  readonly markdown: string;
  readonly links: readonly OracleLink[];
}

export const SPEC_EXAMPLES: readonly SpecExample[] = spec.tests;

const PREFIX = "citation:";

/** A spec example's Markdown with every label prefixed `citation:`. */
export function asCitationCase(markdown: string): string {
  return markdown.replaceAll("[", `[${PREFIX}`);
}

/** The links commonmark.js renders from bracket syntax (not autolinks, not inside images). */
export function oracleLinks(markdown: string): OracleLink[] {
  const tree = new Parser().parse(markdown);
  const links: OracleLink[] = [];
  const walker = tree.walker();
  let imageDepth = 0;
  for (let event = walker.next(); event !== null; event = walker.next()) {
    const node: Node = event.node;
    if (node.type === "image") imageDepth += event.entering ? 1 : -1;
    if (node.type !== "link" || !event.entering || imageDepth > 0) continue;
    // An autolink's text is its address; a bracket link's text starts with the inserted prefix.
    if (!textOf(node).startsWith(PREFIX)) continue;
    links.push({ destination: node.destination ?? "" });
  }
  return links;
}

function textOf(node: Node): string {
  let text = "";
  const walker = node.walker();
  for (let event = walker.next(); event !== null; event = walker.next()) {
    if (event.entering && event.node.literal !== null && event.node.type !== "html_inline") {
      text += event.node.literal;
    }
  }
  return text;
}

/** A destination as commonmark.js normalizes it for rendering (what the oracle reports). */
export function normalizeDestination(href: string): string {
  return encode(href);
}

export const SPEC_CASES: readonly SpecCase[] = SPEC_EXAMPLES.map((example) => {
  const markdown = asCitationCase(example.markdown);
  return { number: example.number, section: example.section, markdown, links: oracleLinks(markdown) };
});
