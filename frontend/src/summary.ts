/**
 * One message's citations resolved against its evidence (numbers, distinct sources, what is
 * unresolved or malformed), and the classification of a rendered link. Apart from resolve.ts
 * because it needs the citation scanner (and so the Markdown parser): a host whose own renderer
 * finds the links (the `KnowledgeLink` glue) never loads this module.
 */

import { citationsOf } from "./citationMemo.js";
import type { Citation } from "./citations.js";
import { classifyDestination } from "./handles.js";
import type { ResolvedSource, SourceLookup } from "./lookup.js";

// The same table as contracts/README.md §4, applied to the label and destination a renderer
// produced after sanitizing.

/** What a rendered link is, by its destination (and, for `citation:` labels, its label). */
export type LinkClass =
  | { readonly kind: "shared" | "native"; readonly id: string }
  | { readonly kind: "malformed"; readonly reason: "bad_source_id" | "unsupported_destination" }
  | { readonly kind: "web"; readonly href: string }
  | { readonly kind: "link" };

/**
 * Classify a link by its (sanitized) destination and label text, as §4 classifies a written
 * link. `href` is null when the sanitizer removed it (e.g. `javascript:`): with a `citation:`
 * label that is a malformed citation, otherwise an ordinary (and then unrendered) link.
 */
export function classifyLink(label: string, href: string | null | undefined): LinkClass {
  const destination = typeof href === "string" ? href : "";
  const found = classifyDestination(label, destination);
  if (found === null) return { kind: "link" };
  switch (found.kind) {
    case "shared":
    case "native":
      return { kind: found.kind, id: found.sourceId as string };
    case "web":
      return { kind: "web", href: destination };
    case "malformed":
      return { kind: "malformed", reason: found.reason ?? "unsupported_destination" };
  }
}

/** The citations of one message, resolved against its evidence. */
export interface CitationSummary {
  /** Distinct verified sources, in first-citation order. */
  readonly sources: readonly ResolvedSource[];
  /** 1-based number of each verified source id, in first-citation order. */
  readonly numbers: ReadonlyMap<string, number>;
  /** Distinct well-formed ids cited without evidence in the loaded history. */
  readonly unresolved: number;
  /** Malformed citation links (occurrences). */
  readonly malformed: number;
  /** Every citation found (contracts/README.md §4), in document order. */
  readonly citations: readonly Citation[];
}

/**
 * Resolve the citations of `markdown` (§4: its CommonMark links) against `lookup`. Pass the
 * citations already found on a parsed tree instead of the text to skip the parse.
 */
export function summarizeCitations(
  markdown: string | readonly Citation[],
  lookup: SourceLookup,
): CitationSummary {
  const citations = typeof markdown === "string" ? citationsOf(markdown) : markdown;
  const sources: ResolvedSource[] = [];
  const numbers = new Map<string, number>();
  const missing = new Set<string>();
  let malformed = 0;
  for (const citation of citations) {
    if (citation.kind === "malformed") {
      malformed += 1;
      continue;
    }
    if ((citation.kind !== "shared" && citation.kind !== "native") || citation.source_id === null) {
      continue;
    }
    const id = citation.source_id;
    if (numbers.has(id) || missing.has(id)) continue;
    const source = lookup.get(id);
    if (source === undefined) {
      missing.add(id);
    } else {
      sources.push(source);
      numbers.set(id, sources.length);
    }
  }
  return {
    sources: Object.freeze(sources),
    numbers,
    unresolved: missing.size,
    malformed,
    citations: Object.isFrozen(citations) ? citations : Object.freeze([...citations]),
  };
}

/** How many sources one message cites, as {@link summarizeCitations} counts them. */
export interface CitationCounts {
  /** Distinct verified sources (`summarizeCitations(...).sources.length`). */
  readonly sources: number;
  readonly unresolved: number;
  readonly malformed: number;
}

/**
 * The counts of {@link summarizeCitations} without its lists: what a closed sources panel shows.
 * One lookup per distinct id, nothing kept but the ids seen.
 */
export function countCitations(citations: readonly Citation[], lookup: SourceLookup): CitationCounts {
  const seen = new Set<string>();
  let sources = 0;
  let malformed = 0;
  for (const citation of citations) {
    if (citation.kind === "malformed") {
      malformed += 1;
      continue;
    }
    if ((citation.kind !== "shared" && citation.kind !== "native") || citation.source_id === null) continue;
    const id = citation.source_id;
    if (seen.has(id)) continue;
    seen.add(id);
    if (lookup.get(id) !== undefined) sources += 1;
  }
  return { sources, unresolved: seen.size - sources, malformed };
}
