/**
 * The citations of recently rendered Markdown, found once: a message's `KnowledgeMarkdown` and its
 * `SourcesPanel` (and every re-render of either) ask for the same string, and finding is the
 * largest part of their own cost. A bounded map keyed by the Markdown itself; results are frozen.
 */

import { findCitations, type Citation } from "./citations.js";

/** Distinct Markdown strings remembered (oldest forgotten first). */
export const MAX_MEMO_ENTRIES = 2_048;
/** Longer Markdown is not remembered (keys stay small; long messages are rare). */
export const MAX_MEMO_CHARS = 100_000;

const memo = new Map<string, readonly Citation[]>();

/** Markdown strings this memo had to parse itself (a count for the tests: one parse a message). */
export const memoWork = { finds: 0 };

function remember(markdown: string, found: readonly Citation[]): readonly Citation[] {
  memo.set(markdown, found);
  if (memo.size > MAX_MEMO_ENTRIES) memo.delete(memo.keys().next().value as string);
  return found;
}

/**
 * Record the citations a renderer already found on its own parse of exactly `markdown` (same
 * parser, no extra plugins), so a `SourcesPanel` of the same message does not parse it again.
 */
export function rememberCitations(markdown: string, citations: readonly Citation[]): void {
  if (markdown.length <= MAX_MEMO_CHARS && !memo.has(markdown)) {
    remember(markdown, Object.isFrozen(citations) ? citations : Object.freeze([...citations]));
  }
}

/** `findCitations(markdown)`, frozen, from the memo when the same string was seen recently. */
export function citationsOf(markdown: string): readonly Citation[] {
  const known = memo.get(markdown);
  if (known !== undefined) return known;
  memoWork.finds += 1;
  const found = Object.freeze(findCitations(markdown));
  return markdown.length > MAX_MEMO_CHARS ? found : remember(markdown, found);
}
