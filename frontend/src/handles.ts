/**
 * The one handle grammar (contracts/README.md §3, §4 and §7): which link destinations name
 * evidence.
 *
 * A handle is the fragment a citation links to: `#knowledge-source-<32 hex>` for a shared record,
 * `#knowledge-<32 hex>-<n>` for a native RAGFlow record, each also in the `#user-content-` form a
 * sanitizing renderer rewrites fragments to. The envelope reader, the native reader and the
 * citation scanner all take their patterns from here, so the grammar cannot drift between them;
 * and since this module imports no Markdown parser, neither do the readers. The twin of
 * `backend/deerflow/knowledge/handles.py` (same constant names).
 */

/** The 32-hex shared source id (a regular-expression body, unanchored). */
export const SHARED_ID_SYNTAX = "[0-9a-f]{32}";
/** The native RAGFlow id `<32 hex>-<n>`, n = 1–999 without a leading zero (unanchored). */
export const NATIVE_ID_SYNTAX = "[0-9a-f]{32}-[1-9][0-9]{0,2}";
/** The handle of a shared record: `#knowledge-source-<id>`. */
export const SHARED_HANDLE_PREFIX = "#knowledge-source-";
/** The handle of a native record: `#knowledge-<id>`. */
export const NATIVE_HANDLE_PREFIX = "#knowledge-";
/** What rehype-sanitize's clobbering prefixes to fragments; both forms are handles. */
export const USER_CONTENT_PREFIX = "user-content-";
/** The label prefix that makes a web or unsupported destination a citation (§4). */
export const CITATION_LABEL_PREFIX = "citation:";

const SHARED_RE = new RegExp(`^#(?:${USER_CONTENT_PREFIX})?knowledge-source-(${SHARED_ID_SYNTAX})$`);
const NATIVE_RE = new RegExp(`^#(?:${USER_CONTENT_PREFIX})?knowledge-(${NATIVE_ID_SYNTAX})$`);
const SHARED_HANDLE_PREFIXES = [SHARED_HANDLE_PREFIX, `#${USER_CONTENT_PREFIX}knowledge-source-`] as const;
const WEB_PREFIXES = ["http://", "https://"] as const;

/**
 * `](#knowledge-<id>)` where it occurs in text, capturing the id: DeerFlow's substring rule for
 * native handles (§7); the closing parenthesis makes `…-1` differ from `…-12`. Global, so use it
 * with `String.prototype.matchAll` (which copies it) and never with `exec`.
 */
export const NATIVE_LINK_PATTERN = new RegExp(
  `\\]\\(#(?:${USER_CONTENT_PREFIX})?knowledge-(${NATIVE_ID_SYNTAX})\\)`,
  "g",
);

export type CitationKind = "shared" | "native" | "web" | "malformed";
export type CitationReason = "bad_source_id" | "unsupported_destination";

/** How §4's table classifies a link: by its destination, and for `citation:` labels by its label. */
export interface DestinationClass {
  readonly kind: CitationKind;
  readonly sourceId: string | null;
  readonly reason: CitationReason | null;
}

/**
 * The one implementation of contracts/README.md §4's destination table. Returns null for an
 * ordinary, non-citation link.
 */
export function classifyDestination(rawLabel: string, href: string): DestinationClass | null {
  const shared = SHARED_RE.exec(href);
  if (shared !== null) return { kind: "shared", sourceId: shared[1] ?? null, reason: null };
  if (SHARED_HANDLE_PREFIXES.some((prefix) => href.startsWith(prefix))) {
    return { kind: "malformed", sourceId: null, reason: "bad_source_id" };
  }
  const native = NATIVE_RE.exec(href);
  if (native !== null) return { kind: "native", sourceId: native[1] ?? null, reason: null };
  if (!rawLabel.startsWith(CITATION_LABEL_PREFIX)) return null;
  if (WEB_PREFIXES.some((prefix) => href.startsWith(prefix))) {
    return { kind: "web", sourceId: null, reason: null };
  }
  return { kind: "malformed", sourceId: null, reason: "unsupported_destination" };
}

/** A label without its leading `citation:`. */
export function stripCitationPrefix(label: string): string {
  return label.startsWith(CITATION_LABEL_PREFIX) ? label.slice(CITATION_LABEL_PREFIX.length) : label;
}
