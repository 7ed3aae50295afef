/**
 * The three faces of a citation: a verified chip with a preview, an inert label with its reason,
 * and a web citation link. Every string from evidence or from the model is rendered as a React
 * text node (never HTML, never Markdown), and every href passes this package's allowlist.
 */

import {
  Fragment,
  useCallback,
  useEffect,
  useId,
  useLayoutEffect,
  useRef,
  useState,
  type Key,
  type ReactElement,
  type ReactNode,
  type Ref,
  type RefObject,
} from "react";

import type { ResolvedSource } from "../lookup.js";
import { describeSource, type InertReason, type SourceDisplay } from "../resolve.js";
import { EXTERNAL_LINK_REL, displayHost, safeExternalUrl } from "../url.js";
import { pageText, shortDescription } from "./description.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";
import { visibleText } from "../visible.js";
import { placePreview, type Box } from "./placement.js";
import { findQuote, type QuoteSpan } from "./quote.js";
import { readableExcerpt } from "./readable.js";
import { isPinned, openChip, useChipGroup, type ChipHandlers } from "./chipState.js";

export interface CitationChipProps {
  /** The verified source the citation resolved to. */
  readonly source: ResolvedSource;
  /** The source's 1-based number in the message (first-citation order), if known. */
  readonly number?: number | undefined;
  /**
   * Tells this source apart from another of the same document cited in the message ("p. 3",
   * "excerpt 2"); shown after the title.
   */
  readonly suffix?: string | undefined;
  readonly labels?: KnowledgeLabels | undefined;
  /**
   * The id of an element elsewhere in the document that holds this chip's short description
   * (provider and locators), e.g. one shared by a message's chips that read alike; the chip then
   * renders none of its own. Default: the chip's own hidden description.
   */
  readonly describedBy?: string | undefined;
}

/** The excerpt as readable text (see readable.ts), the quoted characters marked. */
function excerptWithQuote(excerpt: string, quote: QuoteSpan | null): ReactNode {
  const shown = readableExcerpt(excerpt);
  if (quote === null) return shown(0, excerpt.length);
  return (
    <>
      {shown(0, quote.start)}
      <mark className="dk-quote">{shown(quote.start, quote.end)}</mark>
      {shown(quote.end, excerpt.length)}
    </>
  );
}

function SourceTitle({ display, labels }: { readonly display: SourceDisplay; readonly labels: KnowledgeLabels }): ReactElement {
  return (
    <bdi className={display.title === null ? "dk-title dk-untitled" : "dk-title"}>
      {display.title ?? labels.untitled}
    </bdi>
  );
}

/** The locators and excerpt of a verified source (shared by the chip preview and the panel). */
export function SourceDetails({
  display,
  labels = DEFAULT_LABELS,
  showTitle = true,
  suffix,
  quote = null,
  linkFocusable = true,
}: {
  readonly display: SourceDisplay;
  readonly labels?: KnowledgeLabels | undefined;
  readonly showTitle?: boolean | undefined;
  /** Shown after the title (see {@link CitationChipProps.suffix}). */
  readonly suffix?: string | undefined;
  /** The part of the excerpt to highlight (what the cited sentence quotes). */
  readonly quote?: QuoteSpan | null | undefined;
  /** False keeps the source link out of the tab order (a preview opened by focus alone). */
  readonly linkFocusable?: boolean | undefined;
}): ReactElement {
  const pages = pageText(display.pages, labels);
  const url = display.url === null ? null : safeExternalUrl(display.url);
  const host = url === null ? null : displayHost(url);
  return (
    <>
      <span className="dk-meta">
        <span className="dk-provider">{display.provider}</span>
        {display.datasetName !== null && (
          <span className="dk-dataset">
            {labels.dataset}: <bdi>{display.datasetName}</bdi>
          </span>
        )}
        {pages !== null && <span className="dk-pages">{pages}</span>}
      </span>
      {showTitle && suffix === undefined && <SourceTitle display={display} labels={labels} />}
      {showTitle && suffix !== undefined && (
        <span className="dk-title-line">
          <SourceTitle display={display} labels={labels} />
          <span className="dk-suffix"> · {suffix}</span>
        </span>
      )}
      <span className="dk-excerpt-label dk-sr-only">{labels.excerpt}: </span>
      {/* A scrolling box is a tab stop in Chromium: only once the preview is pinned. */}
      <span className="dk-excerpt" tabIndex={linkFocusable ? 0 : -1}>
        {excerptWithQuote(display.excerpt, quote)}
      </span>
      {display.truncated && <span className="dk-truncated">{labels.excerptTruncated}</span>}
      {url !== null && (
        <a
          className="dk-source-link"
          href={url}
          target="_blank"
          rel={EXTERNAL_LINK_REL}
          tabIndex={linkFocusable ? undefined : -1}
        >
          {labels.openSource}
          {host !== null && <span className="dk-host"> · {host}</span>}
          <span className="dk-sr-only"> {labels.opensInNewTab}</span>
        </a>
      )}
    </>
  );
}

// Blocks whose text is "the sentence" a chip cites.
const SENTENCE_BLOCK = "p, li, td, th, blockquote, h1, h2, h3, h4, h5, h6, dd, dt";
const SENTENCE_END = /[.!?。！？]\s+(?=\S)/g;
// What the cited sentence skips: other chips (it starts after the last one), open previews and
// hidden descriptions.
const NOT_SENTENCE = ".dk-chip, .dk-preview, [hidden]";

/** The text of the sentence a chip ends: from the previous chip or sentence end to the chip. */
export function citedSentence(chip: Element): string {
  const block = chip.closest(SENTENCE_BLOCK) ?? chip.parentElement;
  if (block === null) return "";
  let text = "";
  const walk = (node: Node): boolean => {
    for (let child = node.firstChild; child !== null; child = child.nextSibling) {
      if (child === chip) return true;
      if (child.nodeType === Node.TEXT_NODE) text += child.nodeValue ?? "";
      else if (child instanceof Element) {
        if (child.matches(NOT_SENTENCE)) {
          if (child.classList.contains("dk-chip")) text = "";
        } else if (walk(child)) return true;
      }
    }
    return false;
  };
  walk(block);
  let start = 0;
  for (const match of text.matchAll(SENTENCE_END)) start = match.index + match[0].length;
  return text.slice(start);
}

const KEEP_CLEAR = ".dk-sources-summary, [data-dk-keep-clear]";

function boxOf(element: Element): Box {
  const r = element.getBoundingClientRect();
  return { left: r.left, top: r.top, right: r.right, bottom: r.bottom };
}

/**
 * Pixels a preview keeps from the left and right edges of the visible message list: on a phone
 * that edge is the screen's, and a box touching it reads as cut off.
 */
export const PREVIEW_EDGE_MARGIN = 8;

/**
 * The visible part of the nearest scrolling ancestor (the message list), inside the viewport,
 * less {@link PREVIEW_EDGE_MARGIN} on the left and right.
 */
function visibleBound(element: Element): Box {
  const bound = scrollingBound(element);
  // Only when the margins leave room for a preview at all (a very narrow list keeps its edges).
  if (bound.right - bound.left <= 4 * PREVIEW_EDGE_MARGIN) return bound;
  return { ...bound, left: bound.left + PREVIEW_EDGE_MARGIN, right: bound.right - PREVIEW_EDGE_MARGIN };
}

function scrollingBound(element: Element): Box {
  let bound: Box = { left: 0, top: 0, right: window.innerWidth, bottom: window.innerHeight };
  for (let node = element.parentElement; node !== null && node !== document.body; node = node.parentElement) {
    const overflow = getComputedStyle(node).overflowY;
    if (overflow === "auto" || overflow === "scroll") {
      const box = boxOf(node);
      bound = {
        left: Math.max(bound.left, box.left),
        top: Math.max(bound.top, box.top),
        right: Math.min(bound.right, box.right),
        bottom: Math.min(bound.bottom, box.bottom),
      };
      break;
    }
  }
  return bound;
}

/** Keeps the open preview placed (see {@link placePreview}) while the page scrolls or resizes. */
function usePlacement(anchor: () => HTMLElement | null, preview: RefObject<HTMLElement | null>): void {
  useLayoutEffect(() => {
    const place = (): void => {
      const chip = anchor();
      const box = preview.current;
      if (chip === null || box === null) return;
      const chipBox = boxOf(chip);
      const bound = visibleBound(chip);
      const keepClear: Box[] = [];
      for (const element of document.querySelectorAll(KEEP_CLEAR)) {
        if (!box.contains(element)) keepClear.push(boxOf(element));
      }
      const placed = placePreview(chipBox, { width: box.offsetWidth, height: box.offsetHeight }, bound, keepClear);
      box.style.left = `${placed.left}px`;
      box.style.top = `${placed.top}px`;
      box.dataset["dkPlacement"] = placed.placement;
    };
    place();
    window.addEventListener("scroll", place, true);
    window.addEventListener("resize", place);
    return () => {
      window.removeEventListener("scroll", place, true);
      window.removeEventListener("resize", place);
    };
  }, [anchor, preview]);
}

/** What one chip of a group renders from (see {@link chipElements}). */
export interface ChipView {
  readonly display: SourceDisplay;
  readonly number: number | undefined;
  readonly suffix: string | undefined;
  readonly labels: KnowledgeLabels;
  /** The id of the chip's short description (shared by the chips that describe alike). */
  readonly descriptionId: string;
  /** True for the first chip of its description: the hidden description follows it. */
  readonly ownsDescription: boolean;
  /** The group's preview id, or null while this chip is closed. */
  readonly previewId: string | null;
  readonly pinned: boolean;
  /** This chip's element (for placing the preview and reading the cited sentence). */
  readonly anchor: () => HTMLElement | null;
  readonly onDismiss: () => void;
  /** Handlers for the button and the preview, when no ancestor delegates them. */
  readonly handlers?: ChipHandlers | undefined;
  readonly buttonRef?: Ref<HTMLButtonElement> | undefined;
}

/**
 * Chip numbers 1 to this one are drawn by a rule of their own in knowledge.css (`.dk-n3` draws
 * "3"); a higher number is drawn from `data-dk-number` with `attr()`. Chromium cannot share the
 * computed style of an element whose style reads an attribute, so with `attr()` alone every chip
 * paid a full style cascade: about a fifth of a long thread's first render.
 */
export const MAX_NUMBER_CLASS = 99;

function chipClass(number: number | undefined, split: boolean): string {
  const base = split ? "dk-citation dk-chip dk-chip-split" : "dk-citation dk-chip";
  return number !== undefined && Number.isInteger(number) && number >= 1 && number <= MAX_NUMBER_CLASS
    ? `${base} dk-n${number}`
    : base;
}

/**
 * One chip's DOM: a closed chip is its button (the number is generated content: `dk-n<number>`
 * in its class, or `data-dk-number`), plus, after the first chip of a description, that description as a hidden
 * element (`aria-describedby` reads hidden targets); an open one is followed by its preview,
 * which the button is then described by.
 */
export function chipElements(view: ChipView, key?: Key): ReactElement {
  const { display, number, suffix, labels, previewId, handlers } = view;
  const title = display.title ?? labels.untitled;
  // The name contains the visible text ("Title · excerpt 2") word for word: WCAG 2.5.3.
  const named = suffix === undefined ? title : `${title} · ${suffix}`;
  return (
    <Fragment key={key}>
      <button
        type="button"
        className={chipClass(number, suffix !== undefined)}
        data-dk-source-id={display.id}
        data-dk-number={number}
        aria-describedby={previewId ?? view.descriptionId}
        aria-expanded={previewId !== null}
        aria-label={`${labels.source}${number === undefined ? "" : ` ${number}`}: ${named}`}
        ref={view.buttonRef}
        {...handlers}
      >
        {/* The button isolates its text (unicode-bidi: isolate in knowledge.css), as <bdi> would. */}
        {suffix === undefined ? (
          title
        ) : (
          // The suffix must stay visible when a long title is cut: title and suffix apart.
          <>
            <bdi className="dk-chip-title">{title}</bdi>
            <span className="dk-chip-suffix"> · {suffix}</span>
          </>
        )}
      </button>
      {previewId !== null && (
        <ChipPreview
          id={previewId}
          display={display}
          labels={labels}
          suffix={suffix}
          anchor={view.anchor}
          pinned={view.pinned}
          handlers={handlers}
          onDismiss={view.onDismiss}
        />
      )}
      {view.ownsDescription && (
        <span id={view.descriptionId} hidden>
          {shortDescription(display, labels)}
        </span>
      )}
    </Fragment>
  );
}

function ChipPreview({
  id,
  display,
  labels,
  suffix,
  anchor,
  pinned,
  handlers,
  onDismiss,
}: {
  readonly id: string;
  readonly display: SourceDisplay;
  readonly labels: KnowledgeLabels;
  readonly suffix: string | undefined;
  readonly anchor: () => HTMLElement | null;
  readonly pinned: boolean;
  readonly handlers: ChipHandlers | undefined;
  readonly onDismiss: () => void;
}): ReactElement {
  const ref = useRef<HTMLSpanElement>(null);
  // Escape also dismisses a preview opened by hover alone (focus elsewhere): WCAG 1.4.13.
  const dismiss = useRef(onDismiss);
  dismiss.current = onDismiss;
  useEffect(() => {
    const onKeyDown = (event: globalThis.KeyboardEvent): void => {
      if (event.key === "Escape") dismiss.current();
    };
    document.addEventListener("keydown", onKeyDown);
    return () => document.removeEventListener("keydown", onKeyDown);
  }, []);
  // Computed once, when the preview opens: what the sentence before the chip quotes.
  const [quote] = useState(() => {
    const chip = anchor();
    return chip === null ? null : findQuote(citedSentence(chip), display.excerpt);
  });
  const anchorOnce = useRef(anchor);
  usePlacement(anchorOnce.current, ref);
  useLayoutEffect(() => {
    const mark = ref.current?.querySelector<HTMLElement>(".dk-quote");
    const box = mark?.closest<HTMLElement>(".dk-excerpt");
    if (mark != null && box != null) box.scrollTop = Math.max(0, mark.offsetTop - box.clientHeight / 3);
  }, []);
  return (
    <span ref={ref} id={id} className="dk-preview" data-dk-kind={display.kind} data-dk-source-id={display.id} tabIndex={-1} {...handlers}>
      <SourceDetails display={display} labels={labels} suffix={suffix} quote={quote} linkFocusable={pinned} />
    </span>
  );
}

/**
 * A verified citation: a focusable button showing the verified title (never the model's link
 * text). Its preview opens on hover, on keyboard focus and on click, stays open while the pointer
 * or focus is inside it, closes with Escape, and is wired to the button with `aria-describedby`.
 *
 * Lean: while closed, the chip is one button and a hidden short description (provider and
 * locators) that `aria-describedby` points to; the preview, with the excerpt, mounts only while
 * open and the button is then described by it. The preview is placed next to the chip where it
 * fits (below, above, then beside), inside the visible part of the scrolling message list, clear
 * of the Sources toggles and of any element marked `data-dk-keep-clear`; it highlights and
 * scrolls to the part of the excerpt that the sentence before the chip quotes. Its link joins the
 * tab order only once the preview is pinned (click or Enter), so each chip is one tab stop.
 * (`KnowledgeMarkdown` renders the same DOM without a component per chip: one state per message.)
 */
export function CitationChip({ source, number, suffix, labels = DEFAULT_LABELS, describedBy }: CitationChipProps): ReactElement {
  const id = useId();
  const button = useRef<HTMLButtonElement | null>(null);
  const chips = useCallback((): ArrayLike<Element> => (button.current === null ? [] : [button.current]), []);
  const previewId = `dk-preview-${id}`;
  const group = useChipGroup(previewId, chips);
  const open = openChip(group.state) === 0;
  const anchor = useCallback(() => group.chipAt(0), [group.chipAt]);
  const element = chipElements({
    display: describeSource(source),
    number,
    suffix,
    labels,
    descriptionId: describedBy ?? `dk-description-${id}`,
    ownsDescription: describedBy === undefined,
    previewId: open ? previewId : null,
    pinned: isPinned(group.state),
    anchor,
    onDismiss: group.dismiss,
    handlers: group.handlers,
    buttonRef: button,
  });
  return element;
}

export interface InertCitationProps {
  /** The link text the model wrote (shown as plain text, marked unverified). */
  readonly label: string;
  readonly reason: InertReason;
  readonly labels?: KnowledgeLabels | undefined;
}

/** A citation that cannot be shown as evidence: not focusable, not navigable, with its reason. */
export function InertCitation({ label, reason, labels = DEFAULT_LABELS }: InertCitationProps): ReactElement {
  return (
    <span
      className={reason === "evidence_not_loaded" ? "dk-inert dk-unresolved" : "dk-inert dk-malformed"}
      data-dk-reason={reason}
      title={labels.inertHelp[reason]}
    >
      {label !== "" && <bdi className="dk-inert-label">{visibleText(label)}</bdi>}
      <span className="dk-inert-reason">
        <span className="dk-sr-only"> (</span>
        {labels.inert[reason]}
        <span className="dk-sr-only">)</span>
      </span>
    </span>
  );
}

export interface WebCitationProps {
  readonly label: string;
  /** Must already be an allowed http(s) URL; anything else renders as text. */
  readonly href: string;
  readonly labels?: KnowledgeLabels | undefined;
}

/** A web citation `[citation:Title](https://…)`: the existing external-link display. */
export function WebCitation({ label, href, labels = DEFAULT_LABELS }: WebCitationProps): ReactElement {
  const url = safeExternalUrl(href);
  if (url === null) {
    return <InertCitation label={label} reason="unsupported_destination" labels={labels} />;
  }
  const host = displayHost(url);
  return (
    <a className="dk-web-citation" href={url} target="_blank" rel={EXTERNAL_LINK_REL}>
      <bdi className="dk-web-label">{visibleText(label)}</bdi>
      {host !== null && <span className="dk-host">{host}</span>}
      <span className="dk-sr-only"> {labels.opensInNewTab}</span>
    </a>
  );
}
