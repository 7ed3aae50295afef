/**
 * Telling apart two sources of one document cited in the same message: same title, so each gets
 * a short suffix — its page when the pages differ, else "excerpt 2", "excerpt 3" in citation order.
 */

import type { ResolvedSource } from "../lookup.js";
import { describeSource } from "../resolve.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";

/**
 * For each source whose displayed title another source in `sources` shares, the suffix that tells
 * it apart (`"p. 3"` or `"excerpt 2"`); sources with a unique title are absent.
 */
export function distinguishSources(
  sources: readonly ResolvedSource[],
  labels: KnowledgeLabels = DEFAULT_LABELS,
): ReadonlyMap<string, string> {
  const byTitle = new Map<string, { id: string; pages: string }[]>();
  for (const source of sources) {
    const display = describeSource(source);
    const title = display.title ?? "";
    const group = byTitle.get(title) ?? [];
    if (group.some((entry) => entry.id === display.id)) continue;
    group.push({ id: display.id, pages: display.pages.join(", ") });
    byTitle.set(title, group);
  }
  const suffixes = new Map<string, string>();
  for (const group of byTitle.values()) {
    if (group.length < 2) continue;
    const pages = group.map((entry) => entry.pages);
    const pagesTell = pages.every((page) => page !== "") && new Set(pages).size === pages.length;
    group.forEach((entry, index) => {
      suffixes.set(entry.id, pagesTell ? labels.pageShort(entry.pages) : labels.excerptNumber(index + 1));
    });
  }
  return suffixes;
}
