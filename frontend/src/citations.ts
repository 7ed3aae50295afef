/**
 * The citation link grammar (contracts/README.md §4): find citations, relabel orphans.
 *
 * A deliberate subset of CommonMark that agrees with it on everything a model emits: fenced code
 * blocks, code spans, backslash escapes, images, and the rule that links do not nest. Like the
 * Python twin (`backend/deerflow/knowledge/citations.py`) it runs one left-to-right pass with a
 * bracket stack, so hostile input cannot make it quadratic; both follow the same steps and
 * `contracts/vectors/citations.json` pins them. All syntax characters are ASCII, so the scanner
 * works on UTF-16 units and converts only the reported offsets (and the two length limits) to
 * code points.
 */

import { CONTROL, CodePointCounter, WHITE_SPACE, codePointsBetween } from "./text.js";

export const MAX_LABEL_CHARS = 2_048;
export const MAX_DESTINATION_CHARS = 2_048;
export const CITATION_LABEL_PREFIX = "citation:";

export type CitationKind = "shared" | "native" | "web" | "malformed";
export type CitationReason = "bad_source_id" | "unsupported_destination";

export interface Citation {
  readonly kind: CitationKind;
  /** The label without `citation:` and with backslash escapes resolved (display text). */
  readonly label: string;
  /** The label exactly as written between the brackets. */
  readonly raw_label: string;
  readonly href: string;
  /** The 32-hex id (`shared`), `<hex>-<n>` (`native`), otherwise null. */
  readonly source_id: string | null;
  readonly reason: CitationReason | null;
  /** Code-point offset of the opening bracket. */
  readonly start: number;
  /** Code-point offset just past the closing parenthesis. */
  readonly end: number;
}

export interface FindCitationsOptions {
  readonly maxLabelChars?: number;
  readonly maxDestinationChars?: number;
}

const SHARED_RE = /^#(?:user-content-)?knowledge-source-([0-9a-f]{32})$/;
const NATIVE_RE = /^#(?:user-content-)?knowledge-([0-9a-f]{32}-[1-9][0-9]{0,2})$/;
const SHARED_PREFIXES = ["#knowledge-source-", "#user-content-knowledge-source-"] as const;
const WEB_PREFIXES = ["http://", "https://"] as const;
const ASCII_PUNCTUATION = new Set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~");
const DESTINATION_STOP: ReadonlySet<string> = new Set([...WHITE_SPACE, ...CONTROL, ..."()<>"]);
const UNESCAPE_RE = /\\([!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~])/g;

const CODE_SPAN = 1;
const FENCE = 2;

/** A link found by the scanner, in UTF-16 indices of the markdown. */
interface RawLink {
  readonly start: number;
  readonly labelEnd: number;
  readonly end: number;
}

interface Found {
  readonly kind: CitationKind;
  readonly label: string;
  readonly raw_label: string;
  readonly href: string;
  readonly source_id: string | null;
  readonly reason: CitationReason | null;
  readonly start: number;
  readonly end: number;
}

/** Every citation-like link in `markdown`, in document order (never throws on a string). */
export function findCitations(markdown: string, options: FindCitationsOptions = {}): Citation[] {
  const found = scan(markdown, options);
  const counter = new CodePointCounter(markdown);
  return found.map((citation) =>
    Object.freeze({
      ...citation,
      start: counter.at(citation.start),
      end: counter.at(citation.end),
    }),
  );
}

/**
 * `markdown` with every `shared` citation whose id is not in `keepIds` replaced by its written
 * label without the leading `citation:`; everything else is left byte-identical. Relabeling can
 * form a new link, so it repeats until no orphan is left (each pass removes a destination).
 */
export function relabelOrphans(markdown: string, keepIds: Iterable<string>): string {
  const keep = new Set(keepIds);
  let text = markdown;
  for (;;) {
    const relabeled = relabelOnce(text, keep);
    if (relabeled === text) return text;
    text = relabeled;
  }
}

function relabelOnce(markdown: string, keep: ReadonlySet<string>): string {
  const pieces: string[] = [];
  let cursor = 0;
  for (const citation of scan(markdown, {})) {
    if (citation.kind !== "shared" || (citation.source_id !== null && keep.has(citation.source_id))) {
      continue;
    }
    pieces.push(markdown.slice(cursor, citation.start), stripPrefix(citation.raw_label));
    cursor = citation.end;
  }
  if (pieces.length === 0) return markdown;
  pieces.push(markdown.slice(cursor));
  return pieces.join("");
}

function scan(markdown: unknown, options: FindCitationsOptions): Found[] {
  if (typeof markdown !== "string") return [];
  const maxLabel = options.maxLabelChars ?? MAX_LABEL_CHARS;
  const maxDestination = options.maxDestinationChars ?? MAX_DESTINATION_CHARS;
  const code = codeMask(markdown);
  const found: Found[] = [];
  for (const link of links(markdown, code, maxLabel, maxDestination)) {
    const citation = classify(markdown, link);
    if (citation !== null) found.push(citation);
  }
  return found;
}

function stripPrefix(label: string): string {
  return label.startsWith(CITATION_LABEL_PREFIX) ? label.slice(CITATION_LABEL_PREFIX.length) : label;
}

function classify(text: string, { start, labelEnd, end }: RawLink): Found | null {
  const rawLabel = text.slice(start + 1, labelEnd);
  const href = text.slice(labelEnd + 2, end - 1);
  const label = stripPrefix(rawLabel).replace(UNESCAPE_RE, "$1");
  const make = (kind: CitationKind, sourceId: string | null, reason: CitationReason | null): Found => ({
    kind,
    label,
    raw_label: rawLabel,
    href,
    source_id: sourceId,
    reason,
    start,
    end,
  });

  const found = classifyDestination(rawLabel, href);
  return found === null ? null : make(found.kind, found.sourceId, found.reason);
}

/** How §4's table classifies a link: by its destination, and for `citation:` labels by its label. */
export interface DestinationClass {
  readonly kind: CitationKind;
  readonly sourceId: string | null;
  readonly reason: CitationReason | null;
}

/**
 * The one implementation of contracts/README.md §4's destination table (also used to classify
 * links react-markdown rendered). Returns null for an ordinary, non-citation link.
 */
export function classifyDestination(rawLabel: string, href: string): DestinationClass | null {
  const shared = SHARED_RE.exec(href);
  if (shared !== null) return { kind: "shared", sourceId: shared[1] ?? null, reason: null };
  if (SHARED_PREFIXES.some((prefix) => href.startsWith(prefix))) {
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

/** The index just past the line starting at `start` (its `\r\n`, `\r` or `\n` included). */
function lineEnd(text: string, start: number): number {
  const n = text.length;
  let i = start;
  while (i < n) {
    const unit = text.charCodeAt(i);
    if (unit === 0x0a) return i + 1;
    if (unit === 0x0d) return i + 1 < n && text.charCodeAt(i + 1) === 0x0a ? i + 2 : i + 1;
    i += 1;
  }
  return n;
}

/** The line without its line ending. */
function lineBody(text: string, start: number, end: number): string {
  let bodyEnd = end;
  while (bodyEnd > start) {
    const unit = text.charCodeAt(bodyEnd - 1);
    if (unit !== 0x0a && unit !== 0x0d) break;
    bodyEnd -= 1;
  }
  return text.slice(start, bodyEnd);
}

function leadingRun(s: string, from: number, char: string): number {
  let i = from;
  while (i < s.length && s[i] === char) i += 1;
  return i - from;
}

/** A fence opener: `[character, run length]`, or null. */
function fenceOpener(body: string): readonly [string, number] | null {
  const indent = leadingRun(body, 0, " ");
  if (indent > 3) return null;
  const char = body[indent];
  if (char !== "`" && char !== "~") return null;
  const run = leadingRun(body, indent, char);
  if (run < 3) return null;
  if (char === "`" && body.includes("`", indent + run)) return null;
  return [char, run];
}

function closesFence(body: string, char: string, length: number): boolean {
  const indent = leadingRun(body, 0, " ");
  if (indent > 3) return false;
  const run = leadingRun(body, indent, char);
  if (run < length) return false;
  for (let i = indent + run; i < body.length; i++) {
    if (body[i] !== " " && body[i] !== "\t") return false;
  }
  return true;
}

/** Per UTF-16 unit: CODE_SPAN inside a code span, FENCE on the lines of a fenced block, else 0. */
function codeMask(text: string): Uint8Array {
  const n = text.length;
  const mask = new Uint8Array(n);
  let segmentStart = 0;
  let fence: readonly [string, number] | null = null;
  let lineStart = 0;
  while (lineStart < n) {
    const end = lineEnd(text, lineStart);
    const body = lineBody(text, lineStart, end);
    if (fence === null) {
      const opened = fenceOpener(body);
      if (opened !== null) {
        markCodeSpans(text, segmentStart, lineStart, mask);
        fence = opened;
        mask.fill(FENCE, lineStart, end);
      }
    } else {
      mask.fill(FENCE, lineStart, end);
      if (closesFence(body, fence[0], fence[1])) {
        fence = null;
        segmentStart = end;
      }
    }
    lineStart = end;
  }
  if (fence === null) markCodeSpans(text, segmentStart, n, mask);
  return mask;
}

function isEscape(text: string, i: number, end: number): boolean {
  return (
    text.charCodeAt(i) === 0x5c && i + 1 < end && ASCII_PUNCTUATION.has(text.charAt(i + 1))
  );
}

function markCodeSpans(text: string, start: number, end: number, mask: Uint8Array): void {
  // Start positions of every maximal backtick run, by run length (ascending).
  const runs = new Map<number, number[]>();
  for (let i = start; i < end; ) {
    if (text.charCodeAt(i) !== 0x60) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < end && text.charCodeAt(j) === 0x60) j += 1;
    const list = runs.get(j - i);
    if (list === undefined) runs.set(j - i, [i]);
    else list.push(i);
    i = j;
  }
  if (runs.size === 0) return;
  let i = start;
  while (i < end) {
    if (isEscape(text, i, end)) {
      i += 2;
      continue;
    }
    if (text.charCodeAt(i) !== 0x60) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < end && text.charCodeAt(j) === 0x60) j += 1;
    const length = j - i;
    const starts = runs.get(length) ?? [];
    const k = bisectLeft(starts, j);
    const close = starts[k];
    if (close !== undefined) {
      mask.fill(CODE_SPAN, i, close + length);
      i = close + length;
    } else {
      i = j;
    }
  }
}

function bisectLeft(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] as number) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function isEscapedAt(text: string, i: number): boolean {
  let backslashes = 0;
  while (i - backslashes - 1 >= 0 && text.charCodeAt(i - backslashes - 1) === 0x5c) backslashes += 1;
  return backslashes % 2 === 1;
}

function blankLineFollows(text: string, from: number): boolean {
  const n = text.length;
  let i = from;
  while (i < n && (text[i] === " " || text[i] === "\t")) i += 1;
  if (i < n && text[i] === "\n" && text[i - 1] === "\r") return false; // the \n of a \r\n pair
  return i < n && (text[i] === "\r" || text[i] === "\n");
}

/** Index just past `)` when `](destination)` follows the `]` at `close`, else -1. */
function destinationEnd(text: string, code: Uint8Array, close: number, limit: number): number {
  const n = text.length;
  if (close + 1 >= n || text[close + 1] !== "(" || code[close + 1] !== 0) return -1;
  let j = close + 2;
  // At most `limit` destination code points, then the `)`.
  for (let seen = 0; j < n && seen <= limit; seen++) {
    if (code[j] !== 0) return -1;
    const char = text.charAt(j);
    if (char === ")") return j > close + 2 ? j + 1 : -1;
    if (DESTINATION_STOP.has(char)) return -1;
    j += isPairAt(text, j) ? 2 : 1;
  }
  return -1;
}

function isPairAt(text: string, i: number): boolean {
  const high = text.charCodeAt(i);
  const low = text.charCodeAt(i + 1);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

function labelFits(text: string, start: number, close: number, limit: number): boolean {
  const units = close - start - 1;
  if (units <= limit) return true;
  if (units > 2 * limit) return false;
  return codePointsBetween(text, start + 1, close) <= limit;
}

/** Every inline link, images and their contents excluded, in document order. */
function links(text: string, code: Uint8Array, maxLabel: number, maxDestination: number): RawLink[] {
  // Open brackets: position, whether `![`, and how many links had been found when it was pushed.
  // A plain opener is active only while no link has been found since (links do not nest).
  const openers: Array<{ position: number; image: boolean; generation: number }> = [];
  let generation = 0;
  let found: RawLink[] = [];
  const images: Array<readonly [number, number]> = [];
  const n = text.length;
  let i = 0;
  while (i < n) {
    const mark = code[i] as number;
    if (mark !== 0) {
      if (mark === FENCE) openers.length = 0;
      i += 1;
      continue;
    }
    const char = text.charAt(i);
    if (char === "\\" && i + 1 < n && ASCII_PUNCTUATION.has(text.charAt(i + 1)) && code[i + 1] === 0) {
      i += 2;
      continue;
    }
    if (char === "\r" || char === "\n") {
      if (blankLineFollows(text, i + 1)) openers.length = 0;
    } else if (char === "[") {
      const image = i > 0 && text[i - 1] === "!" && code[i - 1] === 0 && !isEscapedAt(text, i - 1);
      openers.push({ position: i, image, generation });
    } else if (char === "]") {
      const opener = openers.pop();
      if (opener !== undefined) {
        const active = opener.image || opener.generation === generation;
        const end = destinationEnd(text, code, i, maxDestination);
        if (active && end !== -1 && labelFits(text, opener.position, i, maxLabel)) {
          if (opener.image) {
            images.push([opener.position - 1, end]);
          } else {
            found.push({ start: opener.position, labelEnd: i, end });
            generation += 1;
          }
          i = end;
          continue;
        }
      }
    }
    i += 1;
  }
  found.sort((a, b) => a.start - b.start || a.labelEnd - b.labelEnd || a.end - b.end);
  if (images.length > 0) {
    // Drop links that start inside an image: merge the image spans, then sweep both in order.
    images.sort((x, y) => x[0] - y[0]);
    const spans: Array<[number, number]> = [];
    for (const [a, b] of images) {
      const last = spans[spans.length - 1];
      if (last !== undefined && a <= last[1]) last[1] = Math.max(last[1], b);
      else spans.push([a, b]);
    }
    let k = 0;
    found = found.filter((link) => {
      while (k < spans.length && (spans[k] as [number, number])[1] <= link.start) k += 1;
      const span = spans[k];
      return span === undefined || link.start < span[0];
    });
  }
  return found;
}
