/**
 * The three faces of a citation: a verified chip with a preview, an inert label with its reason,
 * and a web citation link. Every string from evidence or from the model is rendered as a React
 * text node (never HTML, never Markdown), and every href passes this package's allowlist.
 */

import {
  useEffect,
  useId,
  useRef,
  useState,
  type FocusEvent,
  type KeyboardEvent,
  type ReactElement,
} from "react";

import { describeSource, type InertReason, type ResolvedSource, type SourceDisplay } from "../resolve.js";
import { EXTERNAL_LINK_REL, displayHost, safeExternalUrl } from "../url.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";
import { visibleText } from "../visible.js";

export interface CitationChipProps {
  /** The verified source the citation resolved to. */
  readonly source: ResolvedSource;
  /** The source's 1-based number in the message (first-citation order), if known. */
  readonly number?: number | undefined;
  readonly labels?: KnowledgeLabels | undefined;
}

function pageText(pages: readonly number[], labels: KnowledgeLabels): string | null {
  if (pages.length === 0) return null;
  return `${pages.length === 1 ? labels.page : labels.pages} ${pages.join(", ")}`;
}

/** The locators and excerpt of a verified source (shared by the chip preview and the panel). */
export function SourceDetails({
  display,
  labels = DEFAULT_LABELS,
  showTitle = true,
}: {
  readonly display: SourceDisplay;
  readonly labels?: KnowledgeLabels | undefined;
  readonly showTitle?: boolean | undefined;
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
      {showTitle && (
        <bdi className={display.title === null ? "dk-title dk-untitled" : "dk-title"}>
          {display.title ?? labels.untitled}
        </bdi>
      )}
      <span className="dk-excerpt-label dk-sr-only">{labels.excerpt}: </span>
      <span className="dk-excerpt">{display.excerpt}</span>
      {display.truncated && <span className="dk-truncated">{labels.excerptTruncated}</span>}
      {url !== null && (
        <a className="dk-source-link" href={url} target="_blank" rel={EXTERNAL_LINK_REL}>
          {labels.openSource}
          {host !== null && <span className="dk-host"> · {host}</span>}
          <span className="dk-sr-only"> {labels.opensInNewTab}</span>
        </a>
      )}
    </>
  );
}

/**
 * A verified citation: a focusable button showing the verified title (never the model's link
 * text). Its preview opens on hover, on keyboard focus and on click, stays open while the pointer
 * or focus is inside it (so its link is reachable), closes with Escape, and is wired to the button
 * with `aria-describedby`.
 */
export function CitationChip({ source, number, labels = DEFAULT_LABELS }: CitationChipProps): ReactElement {
  const display = describeSource(source);
  const previewId = `dk-preview-${useId()}`;
  const buttonRef = useRef<HTMLButtonElement>(null);
  const [hovered, setHovered] = useState(false);
  const [focused, setFocused] = useState(false);
  const [pinned, setPinned] = useState(false);
  const [dismissed, setDismissed] = useState(false);
  const open = !dismissed && (hovered || focused || pinned);
  const title = display.title ?? labels.untitled;

  // Escape also dismisses a preview opened by hover alone (focus elsewhere): WCAG 1.4.13.
  useEffect(() => {
    if (!open) return undefined;
    const onKeyDown = (event: globalThis.KeyboardEvent): void => {
      if (event.key === "Escape") {
        setDismissed(true);
        setPinned(false);
      }
    };
    document.addEventListener("keydown", onKeyDown);
    return () => document.removeEventListener("keydown", onKeyDown);
  }, [open]);

  const comesFromOutside = (event: FocusEvent<HTMLElement>): boolean =>
    !(event.relatedTarget instanceof Node && event.currentTarget.contains(event.relatedTarget));

  return (
    <span
      className="dk-citation"
      data-dk-kind={display.kind}
      data-dk-source-id={display.id}
      onMouseEnter={() => {
        setHovered(true);
        setDismissed(false);
      }}
      onMouseLeave={() => setHovered(false)}
      onFocus={(event) => {
        if (comesFromOutside(event)) {
          setFocused(true);
          setDismissed(false);
        }
      }}
      onBlur={(event) => {
        if (comesFromOutside(event)) {
          setFocused(false);
          setPinned(false);
        }
      }}
      onKeyDown={(event: KeyboardEvent<HTMLElement>) => {
        if (event.key === "Escape" && open) {
          event.stopPropagation();
          setDismissed(true);
          setPinned(false);
          if (event.target !== buttonRef.current) buttonRef.current?.focus();
        }
      }}
    >
      <button
        ref={buttonRef}
        type="button"
        className="dk-chip"
        aria-describedby={previewId}
        aria-expanded={open}
        aria-label={`${labels.source}${number === undefined ? "" : ` ${number}`}: ${title}`}
        onClick={() => {
          setDismissed(false);
          setPinned((value) => !value);
        }}
      >
        {number !== undefined && (
          <span className="dk-chip-number" aria-hidden="true">
            {number}
          </span>
        )}
        <bdi className="dk-chip-title">{title}</bdi>
      </button>
      <span id={previewId} className="dk-preview" hidden={!open}>
        <SourceDetails display={display} labels={labels} />
      </span>
    </span>
  );
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
