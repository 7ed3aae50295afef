/**
 * The user-visible strings of the components (English defaults; pass `labels` to translate).
 */

import type { InertReason } from "../resolve.js";

export interface KnowledgeLabels {
  /** Visually hidden prefix of a chip's accessible name: "Source 2: Guide". */
  readonly source: string;
  /** Shown when a provider gave no title (native records with an empty document name). */
  readonly untitled: string;
  readonly dataset: string;
  readonly page: string;
  readonly pages: string;
  readonly excerpt: string;
  readonly excerptTruncated: string;
  readonly openSource: string;
  readonly opensInNewTab: string;
  /** The reason shown on an inert citation label, by reason code. */
  readonly inert: Readonly<Record<InertReason, string>>;
  /** A longer explanation (the `title` of an inert label), by reason code. */
  readonly inertHelp: Readonly<Record<InertReason, string>>;
  /** Replaces an image: model output never triggers a remote fetch. */
  readonly image: string;
  readonly imageHelp: string;
  /** Shown instead of a link whose address is not allowed. */
  readonly linkBlocked: string;
  /** A citation still being written at the end of a streaming message. */
  readonly pending: string;
  readonly sources: string;
  /** Above a message shown as plain text because rendering it failed. */
  readonly renderFailed: string;
  /** Above a message shown as plain text because it is too long or too heavily formatted. */
  readonly plainFallback: string;
  /** Tells apart two sources of one document cited in one message: "p. 3". */
  readonly pageShort: (pages: string) => string;
  /** …or, when their pages do not tell them apart: "excerpt 2". */
  readonly excerptNumber: (index: number) => string;
  /** Shown in a source's row in the Sources panel to open its excerpt. */
  readonly showExcerpt: string;
  readonly notLoadedCount: (count: number) => string;
  readonly malformedCount: (count: number) => string;
}

export const DEFAULT_LABELS: KnowledgeLabels = Object.freeze({
  source: "Source",
  untitled: "Untitled document",
  dataset: "Dataset",
  page: "Page",
  pages: "Pages",
  excerpt: "Retrieved excerpt",
  excerptTruncated: "Excerpt truncated by the provider",
  openSource: "Open source",
  opensInNewTab: "(opens in a new tab)",
  inert: Object.freeze({
    evidence_not_loaded: "evidence not loaded",
    bad_source_id: "invalid citation",
    unsupported_destination: "unsupported citation",
  }),
  inertHelp: Object.freeze({
    evidence_not_loaded:
      "The evidence for this citation is not in the loaded conversation, so it cannot be shown.",
    bad_source_id: "This citation link does not carry a valid source id.",
    unsupported_destination: "This citation does not point to retrieved evidence or a web page.",
  }),
  image: "image",
  imageHelp: "Images in answers are not loaded.",
  linkBlocked: "Link removed: the address is not allowed.",
  pending: "citation pending",
  sources: "Sources",
  renderFailed: "This message could not be formatted; it is shown as plain text.",
  plainFallback: "This message is too long or too heavily formatted to display safely; it is shown as plain text.",
  pageShort: (pages: string) => `p. ${pages}`,
  excerptNumber: (index: number) => `excerpt ${index}`,
  showExcerpt: "Show the excerpt",
  notLoadedCount: (count: number) =>
    `${count} cited source${count === 1 ? "" : "s"}: evidence not loaded`,
  malformedCount: (count: number) =>
    `${count} malformed citation${count === 1 ? "" : "s"}`,
});

/** `labels` merged over the defaults (nested `inert` / `inertHelp` too). */
export function mergeLabels(labels: Partial<KnowledgeLabels> | undefined): KnowledgeLabels {
  if (labels === undefined) return DEFAULT_LABELS;
  return {
    ...DEFAULT_LABELS,
    ...labels,
    inert: { ...DEFAULT_LABELS.inert, ...labels.inert },
    inertHelp: { ...DEFAULT_LABELS.inertHelp, ...labels.inertHelp },
  };
}
