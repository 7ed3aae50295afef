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

/** `findCitations(markdown)`, frozen, from the memo when the same string was seen recently. */
export function citationsOf(markdown: string): readonly Citation[] {
  if (markdown.length > MAX_MEMO_CHARS) return Object.freeze(findCitations(markdown));
  const known = memo.get(markdown);
  if (known !== undefined) return known;
  const found = Object.freeze(findCitations(markdown));
  memo.set(markdown, found);
  if (memo.size > MAX_MEMO_ENTRIES) memo.delete(memo.keys().next().value as string);
  return found;
}
