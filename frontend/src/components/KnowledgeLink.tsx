/**
 * The link component for any Markdown renderer's `a` (react-markdown's and streamdown's
 * `components.a`, assistant-ui's Markdown text): a knowledge citation becomes a verified chip or
 * an inert label; every other link is handed back to the host's own rendering, untouched.
 */

import {
  isValidElement,
  useSyncExternalStore,
  type ComponentPropsWithoutRef,
  type ReactElement,
  type ReactNode,
} from "react";

import { classifyDestination, stripCitationPrefix, USER_CONTENT_PREFIX, type CitationKind } from "../handles.js";
import type { ResolvedSource } from "../lookup.js";
import type { InertReason } from "../resolve.js";
import { CitationChip, InertCitation } from "./CitationChip.js";
import type { CitationRegistry } from "./citationRegistry.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";
import { useMessageScope } from "./KnowledgeSources.js";
import { ordinaryLink } from "./ordinaryLink.js";

const KNOWLEDGE_PREFIXES = ["#knowledge-", `#${USER_CONTENT_PREFIX}knowledge-`] as const;

/** A href in the knowledge handle namespace (what {@link isKnowledgeHref} accepts). */
export type KnowledgeHref = `#knowledge-${string}` | `#user-content-knowledge-${string}`;

/**
 * True when `href` is in the knowledge handle namespace (`#knowledge-…`, or the
 * `#user-content-knowledge-…` form a sanitizer rewrites it to): such a link is a chip, an inert
 * label or — rarely, a `#knowledge-…` anchor with an ordinary label — the host's own link.
 * Any other href is never a knowledge citation, so a host may branch on this before its own
 * citation logic. The guard names that namespace, not `string`, so a false answer leaves a host's
 * `href: string | undefined` as it was (TypeScript narrows what follows `if (…) return`).
 */
export function isKnowledgeHref(href: unknown): href is KnowledgeHref {
  return typeof href === "string" && KNOWLEDGE_PREFIXES.some((prefix) => href.startsWith(prefix));
}

interface HastLike {
  readonly type?: unknown;
  readonly value?: unknown;
  readonly children?: unknown;
}

/** The text of a hast node (what a renderer's link label says after its plugins ran). */
export function hastText(node: unknown): string {
  if (typeof node !== "object" || node === null) return "";
  const { type, value, children } = node as HastLike;
  if (type === "text" && typeof value === "string") return value;
  if (!Array.isArray(children)) return "";
  let text = "";
  for (const child of children) text += hastText(child);
  return text;
}

const MAX_TEXT_DEPTH = 64;

/** The text of rendered React children (strings and numbers, through elements' children). */
export function childrenText(children: ReactNode, depth = 0): string {
  if (typeof children === "string") return children;
  if (typeof children === "number" || typeof children === "bigint") return String(children);
  if (depth > MAX_TEXT_DEPTH) return "";
  if (Array.isArray(children)) {
    let text = "";
    for (const child of children as readonly ReactNode[]) text += childrenText(child, depth + 1);
    return text;
  }
  if (isValidElement<{ children?: ReactNode }>(children)) return childrenText(children.props.children, depth + 1);
  return "";
}

/** What a citation link resolves to in one message (null: not a knowledge citation). */
export type CitationTarget =
  | { readonly kind: "chip"; readonly id: string; readonly source: ResolvedSource }
  | { readonly kind: "inert"; readonly reason: InertReason }
  | null;

/**
 * The one rule that turns a classified link into a chip or an inert label, recording it in the
 * message's registry (`KnowledgeLink` and `KnowledgeMarkdown` both use it). Web citations and
 * ordinary links are not knowledge citations: null.
 */
export function citationTarget(
  registry: CitationRegistry | null,
  kind: CitationKind | null,
  sourceId: string | null,
  reason: "bad_source_id" | "unsupported_destination" | null,
  rawLabel: string,
  href: string,
): CitationTarget {
  switch (kind) {
    case "shared":
    case "native": {
      const source = sourceId === null ? undefined : registry?.claim(sourceId);
      if (source === undefined || sourceId === null) return { kind: "inert", reason: "evidence_not_loaded" };
      return { kind: "chip", id: sourceId, source };
    }
    case "malformed":
      registry?.claimMalformed(rawLabel, href);
      return { kind: "inert", reason: reason ?? "unsupported_destination" };
    default:
      return null;
  }
}

/** What the host's own link rendering receives: the anchor props the renderer passed. */
export type KnowledgeLinkFallbackProps = ComponentPropsWithoutRef<"a"> & {
  /** The renderer's hast node, as react-markdown and streamdown pass it. */
  readonly node?: unknown;
};

export type KnowledgeLinkProps = KnowledgeLinkFallbackProps & {
  /**
   * Renders every link that is not a knowledge citation (web citations, ordinary links) the
   * host's way, from the same props; called as a component of its own, so it may use hooks.
   * Default: a link whose address passes this package's allowlist, else its text.
   */
  readonly fallback?: ((props: KnowledgeLinkFallbackProps) => ReactNode) | undefined;
};

function Fallback({
  render,
  props,
}: {
  readonly render: ((props: KnowledgeLinkFallbackProps) => ReactNode) | undefined;
  readonly props: KnowledgeLinkFallbackProps;
}): ReactNode {
  if (render !== undefined) return render(props);
  return ordinaryLink(props.href, DEFAULT_LABELS, props.children, undefined);
}

function LinkChip({
  registry,
  id,
  source,
  labels,
}: {
  readonly registry: CitationRegistry;
  readonly id: string;
  readonly source: ResolvedSource;
  readonly labels: KnowledgeLabels;
}): ReactElement {
  // Re-renders when the chip's number or suffix changes (a later chip of the same title). The
  // chip is described by its message's shared description element (KnowledgeMessage draws it).
  const view = useSyncExternalStore(
    registry.subscribe,
    () => registry.viewOf(id),
    () => registry.viewOf(id),
  );
  const [number, suffix, description] = view.split("\u0000") as [string, string, string];
  return (
    <CitationChip
      source={source}
      number={number === "" ? undefined : Number(number)}
      suffix={suffix === "" ? undefined : suffix}
      labels={labels}
      describedBy={description === "" ? undefined : description}
    />
  );
}

/**
 * A drop-in for a Markdown renderer's `a`. Inside a `KnowledgeMessage`:
 *
 * * `#knowledge-source-<32 hex>` or native `#knowledge-<32 hex>-<n>` (also `#user-content-…`)
 *   with verified evidence before the message → a `CitationChip` with the verified title,
 *   provider, excerpt and only the locators the evidence carries, numbered per message;
 * * the same without evidence (or outside a `KnowledgeMessage`) → an inert "evidence not loaded"
 *   label with the model's link text; a malformed knowledge link → an inert label with its reason;
 * * anything else → `fallback(props)`, so the host keeps its own links and web citations.
 *
 * @example
 * <Streamdown components={{ a: (props) => <KnowledgeLink {...props} fallback={HostLink} /> }}>{text}</Streamdown>
 */
export function KnowledgeLink(props: KnowledgeLinkProps): ReactNode {
  const scope = useMessageScope();
  const { fallback, ...rest } = props;
  const href = props.href;
  if (!isKnowledgeHref(href)) return <Fallback render={fallback} props={rest} />;
  const rawLabel = props.node === undefined ? childrenText(props.children) : hastText(props.node);
  const found = classifyDestination(rawLabel, href);
  const target =
    found === null ? null : citationTarget(scope?.registry ?? null, found.kind, found.sourceId, found.reason, rawLabel, href);
  if (target === null) return <Fallback render={fallback} props={rest} />;
  const labels = scope?.labels ?? DEFAULT_LABELS;
  if (target.kind === "inert") {
    return <InertCitation label={stripCitationPrefix(rawLabel)} reason={target.reason} labels={labels} />;
  }
  return <LinkChip registry={(scope as NonNullable<typeof scope>).registry} id={target.id} source={target.source} labels={labels} />;
}
