/**
 * A verified source's short description — its provider and locators in a few words — which a
 * closed chip is described by (`aria-describedby`). Its own module because three pieces share the
 * rule: a chip alone, `KnowledgeMarkdown`'s chips and the glue's per-message registry, which
 * describe the chips of one message that read alike with one hidden element.
 */

import type { SourceDisplay } from "../resolve.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";

/** "Page 3" / "Pages 3, 4", or null without pages. */
export function pageText(pages: readonly number[], labels: KnowledgeLabels): string | null {
  if (pages.length === 0) return null;
  return `${pages.length === 1 ? labels.page : labels.pages} ${pages.join(", ")}`;
}

/** The provider and locators in a few words: a closed chip's description. */
export function shortDescription(display: SourceDisplay, labels: KnowledgeLabels = DEFAULT_LABELS): string {
  const parts = [display.provider];
  if (display.datasetName !== null) parts.push(`${labels.dataset}: ${display.datasetName}`);
  const pages = pageText(display.pages, labels);
  if (pages !== null) parts.push(pages);
  return parts.join(", ");
}
