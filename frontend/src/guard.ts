/**
 * The one Markdown cost guard: what micromark (the parser of `findCitations` and of the renderer)
 * may be asked to parse. micromark recurses once per nested block quote or list (`">"` × 2,492
 * overflows the stack), resolves emphasis and brackets in time quadratic in the markers of one
 * paragraph (`*a` × 25,000 took 20 s) and handles containers super-linearly on long documents.
 *
 * The rule: **Markdown syntax is honoured only within its budget; past a budget, the characters
 * are text.** The budgets, all counted in one linear pass ({@link scanMarkdown}):
 *
 * * per line — container markers (`>`, `-`, `*`, `+`, `1.`, `1)`) past {@link MAX_NESTING_DEPTH}
 *   are escaped and leading indentation past {@link MAX_INDENT_COLUMNS} columns is trimmed
 *   ({@link capNesting}; both parsers: `findCitations` parses the capped text too and maps its
 *   offsets back, so a link is a chip exactly when `findCitations` reports it);
 * * per block (a run of non-blank lines, which no paragraph crosses) — more than
 *   {@link MAX_INLINE_MARKERS} inline markers (`*`/`_`/`~` runs, `[`, `]`) or brackets nested
 *   deeper than {@link MAX_BRACKET_DEPTH}, and the block's `*`, `_`, `~`, `[`, `]`, `!` are text
 *   (the ranges `literalMarkers` applies; both parsers);
 * * per message — only the whole lines within the first {@link MAX_MARKDOWN_CHARS} code points
 *   are Markdown (both parsers). The renderer, which must also stay readable, shows a message
 *   longer than that (in UTF-16 units) or with more than {@link MAX_EMPHASIS_RUNS} `*`/`_` runs as
 *   plain text whole, rather than a wall of literal markers.
 *
 * Fenced code is exempt from the per-line budget (its lines are text to the parser). Counts are
 * in UTF-16 code units, as the parser counts, except the per-message cut (code points, as the
 * Python side counts).
 */

import { applyEdits } from "./text.js";

/** Block quotes and list items nested deeper than this on one line are written as text. */
export const MAX_NESTING_DEPTH = 32;
/** Leading indentation kept per line, in columns (a tab counts 4). */
export const MAX_INDENT_COLUMNS = 128;
/** More `*` / `_` runs than this in a message, and the renderer shows it as plain text. */
export const MAX_EMPHASIS_RUNS = 2_000;
/** Inline markers (`*`/`_`/`~` runs, `[`, `]`) one block may hold before they become text. */
export const MAX_INLINE_MARKERS = 512;
/** Bracket nesting one block may reach before its markers become text. */
export const MAX_BRACKET_DEPTH = 32;
/**
 * Code points of a message parsed as Markdown: the whole lines within them; the lines after are
 * one plain-text paragraph (micromark's container handling is super-linear on long documents).
 */
export const MAX_MARKDOWN_CHARS = 200_000;

/** The budgets (defaults: the constants above). */
export interface MarkdownLimits {
  readonly maxInlineMarkers?: number;
  readonly maxBracketDepth?: number;
  readonly maxMarkdownChars?: number;
}

export interface GuardOptions extends Omit<MarkdownLimits, "maxMarkdownChars"> {
  readonly maxDepth?: number;
  readonly maxIndentColumns?: number;
  readonly maxEmphasisRuns?: number;
  readonly maxChars?: number;
  /** Counts characters examined (for the counted-work tests). */
  readonly work?: { steps: number };
}

export type GuardedMarkdown =
  | {
      readonly kind: "markdown";
      readonly markdown: string;
      /** Lines whose nesting or indentation was capped. */
      readonly cappedLines: number;
    }
  | {
      readonly kind: "plain";
      readonly text: string;
      readonly reason: "too_long" | "too_much_emphasis";
    };

/** What the renderer parses: {@link GuardedMarkdown}, with the block ranges of its Markdown. */
export type ScannedMarkdown =
  | (Extract<GuardedMarkdown, { kind: "markdown" }> & {
      /** Flat `[start, end, …]` UTF-16 ranges of `markdown` whose inline markers are text. */
      readonly literal: readonly number[];
    })
  | Extract<GuardedMarkdown, { kind: "plain" }>;

const FENCE = /^ {0,3}(?:`{3,}|~{3,})/;

const isDigit = (code: number): boolean => code >= 48 && code <= 57;
// Past the line's end counts as blank; so does U+0000, as the guard has always read it.
const isBlankUnit = (code: number): boolean =>
  Number.isNaN(code) || code === 0 || code === 32 || code === 9 || code === 10 || code === 13;

/**
 * The per-block budget: flat `[start, end, start, end, …]` UTF-16 ranges of the blocks of
 * `markdown` over it (the part of the one pass that both parsers use).
 */
export function literalRanges(markdown: string, limits: MarkdownLimits = {}, work?: { steps: number }): number[] {
  const maxMarkers = limits.maxInlineMarkers ?? MAX_INLINE_MARKERS;
  const maxDepth = limits.maxBracketDepth ?? MAX_BRACKET_DEPTH;
  const ranges: number[] = [];
  const n = markdown.length;
  let blockStart = 0;
  let markers = 0;
  let depth = 0;
  let hostile = false;
  let i = 0;
  while (i < n) {
    const lineStart = i;
    let blank = true;
    let previous = -1;
    for (; i < n; i++) {
      const unit = markdown.charCodeAt(i);
      if (unit === 0x0a || unit === 0x0d) break;
      if (unit !== 0x20 && unit !== 0x09) blank = false;
      if (unit === 0x5c) {
        // An escaped character is no marker; a `\` before a line ending escapes nothing.
        const next = i + 1 < n ? markdown.charCodeAt(i + 1) : 0x0a;
        if (next !== 0x0a && next !== 0x0d) i += 1;
        previous = -1;
        continue;
      }
      if (unit === 0x2a || unit === 0x5f || unit === 0x7e) {
        if (unit !== previous) markers += 1;
      } else if (unit === 0x5b) {
        markers += 1;
        depth += 1;
        if (depth > maxDepth) hostile = true;
      } else if (unit === 0x5d) {
        markers += 1;
        if (depth > 0) depth -= 1;
      }
      previous = unit;
    }
    if (markers > maxMarkers) hostile = true;
    if (i < n) i += markdown.charCodeAt(i) === 0x0d && markdown.charCodeAt(i + 1) === 0x0a ? 2 : 1;
    if (blank) {
      if (hostile) ranges.push(blockStart, lineStart);
      blockStart = i;
      markers = 0;
      depth = 0;
      hostile = false;
    }
  }
  if (hostile) ranges.push(blockStart, n);
  if (work !== undefined) work.steps += n;
  return ranges;
}

/** An edit of the per-line budget: the UTF-16 range `[start, end)` of the text becomes `text`. */
export type CapEdit = readonly [start: number, end: number, text: string];

interface LineCaps {
  /** In order, none overlapping: trimmed indentation and inserted backslashes. */
  readonly edits: CapEdit[];
  readonly cappedLines: number;
  readonly emphasisRuns: number;
}

/** The per-line budget of `markdown` (and, in the same pass, its emphasis runs). */
function capLines(markdown: string, options: GuardOptions): LineCaps {
  const { maxDepth = MAX_NESTING_DEPTH, maxIndentColumns = MAX_INDENT_COLUMNS, work } = options;
  const edits: CapEdit[] = [];
  let cappedLines = 0;
  let emphasisRuns = 0;
  let steps = 0;
  let fence: string | null = null;
  const n = markdown.length;
  for (let lineStart = 0; lineStart <= n; ) {
    let lineEnd = markdown.indexOf("\n", lineStart);
    if (lineEnd === -1) lineEnd = n;
    const next = lineEnd + 1;
    const first = markdown.charCodeAt(lineStart);
    // Only a line starting with a space, ` or ~ can open or close a fence (FENCE is anchored).
    const opener = first === 32 || first === 96 || first === 126 ? FENCE.exec(markdown.slice(lineStart, lineEnd)) : null;
    if (fence !== null) {
      // Inside fenced code: everything is text; only the closing fence matters.
      steps += lineEnd - lineStart;
      if (opener !== null) {
        const mark = opener[0].trim();
        if (mark[0] === fence && markdown.slice(lineStart, lineEnd).trim().length === mark.length) fence = null;
      }
      lineStart = next;
      continue;
    }
    if (opener !== null) fence = opener[0].trim()[0] ?? null;

    const end = lineEnd;
    let i = lineStart;
    let columns = 0;
    let depth = 0;
    let capped = false;
    // Leading indentation: past the budget it becomes exactly the budget, in spaces.
    while (i < end && (markdown.charCodeAt(i) === 32 || markdown.charCodeAt(i) === 9)) {
      columns += markdown.charCodeAt(i) === 9 ? 4 - (columns % 4) : 1;
      i += 1;
    }
    steps += i - lineStart;
    if (columns > maxIndentColumns) {
      edits.push([lineStart, i, " ".repeat(maxIndentColumns)]);
      capped = true;
    }
    // Container markers, each optionally followed by spaces.
    for (;;) {
      const code = i < end ? markdown.charCodeAt(i) : Number.NaN;
      let after = -1; // index just past the marker
      let escapeAt = i; // where a backslash makes it text
      const following = i + 1 < end ? markdown.charCodeAt(i + 1) : Number.NaN;
      if (code === 62 /* > */) {
        after = i + 1;
      } else if ((code === 45 || code === 42 || code === 43) /* - * + */ && isBlankUnit(following)) {
        after = i + 1;
      } else if (isDigit(code)) {
        let j = i;
        while (j < end && j - i < 9 && isDigit(markdown.charCodeAt(j))) j += 1;
        const mark = j < end ? markdown.charCodeAt(j) : Number.NaN;
        if ((mark === 46 || mark === 41) /* . ) */ && isBlankUnit(j + 1 < end ? markdown.charCodeAt(j + 1) : Number.NaN)) {
          after = j + 1;
          escapeAt = j;
        }
        steps += j - i;
      }
      if (after === -1) break;
      depth += 1;
      if (depth > maxDepth) {
        edits.push([escapeAt, escapeAt, "\\"]);
        capped = true;
        break;
      }
      i = after;
      while (i < end && (markdown.charCodeAt(i) === 32 || markdown.charCodeAt(i) === 9)) i += 1;
      steps += i - after + 1;
    }
    // Emphasis delimiter runs on the rest of the line.
    let previous = -1;
    for (let k = i; k < end; k++) {
      const code = markdown.charCodeAt(k);
      const delimiter = code === 42 || code === 95; // * _
      if (delimiter && code !== previous) emphasisRuns += 1;
      previous = delimiter ? code : -1;
    }
    steps += end - i;
    if (capped) cappedLines += 1;
    lineStart = next;
  }
  if (work !== undefined) work.steps += steps;
  return { edits, cappedLines, emphasisRuns };
}

/** `markdown` under the per-line budget, with the edits that made it (none: `markdown` itself). */
export interface CappedMarkdown {
  readonly markdown: string;
  readonly edits: readonly CapEdit[];
}

/**
 * The per-line budget alone, which both parsers apply: container markers past
 * {@link MAX_NESTING_DEPTH} escaped, leading indentation past {@link MAX_INDENT_COLUMNS} trimmed.
 * {@link originalOffset} maps an offset of the result back to `markdown`.
 */
export function capNesting(
  markdown: string,
  options: Pick<GuardOptions, "maxDepth" | "maxIndentColumns" | "work"> = {},
): CappedMarkdown {
  const { edits } = capLines(markdown, options);
  return { markdown: applyEdits(markdown, edits), edits };
}

/**
 * The offset of the original text that `offset` of the capped text stands for (`edits` as
 * {@link capNesting} made them). An offset inside trimmed indentation or an inserted backslash
 * maps into the range it replaced; no link starts or ends there.
 */
export function originalOffset(edits: readonly CapEdit[], offset: number): number {
  const starts = cappedStarts(edits);
  // The last edit starting at or before `offset` in the capped text.
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((starts[mid] as number) <= offset) lo = mid + 1;
    else hi = mid;
  }
  if (lo === 0) return offset;
  const [start, end, text] = edits[lo - 1] as CapEdit;
  const cappedStart = starts[lo - 1] as number;
  if (offset < cappedStart + text.length) return start + Math.min(offset - cappedStart, end - start);
  return end + (offset - cappedStart - text.length);
}

const STARTS = new WeakMap<readonly CapEdit[], number[]>();

/** Where each edit starts in the capped text (computed once per edit list). */
function cappedStarts(edits: readonly CapEdit[]): number[] {
  let starts = STARTS.get(edits);
  if (starts === undefined) {
    starts = [];
    let delta = 0;
    for (const [start, end, text] of edits) {
      starts.push(start + delta);
      delta += text.length - (end - start);
    }
    STARTS.set(edits, starts);
  }
  return starts;
}

/**
 * One pass over `markdown` for the renderer: the per-line budget applied, the per-message
 * fallback decided and the per-block ranges of the result (see the module docstring).
 */
export function scanMarkdown(markdown: string, options: GuardOptions = {}): ScannedMarkdown {
  const { maxEmphasisRuns = MAX_EMPHASIS_RUNS, maxChars = MAX_MARKDOWN_CHARS, work } = options;
  if (markdown.length > maxChars) return { kind: "plain", text: markdown, reason: "too_long" };
  const { edits, cappedLines, emphasisRuns } = capLines(markdown, options);
  if (emphasisRuns > maxEmphasisRuns) return { kind: "plain", text: markdown, reason: "too_much_emphasis" };
  const guarded = applyEdits(markdown, edits);
  return {
    kind: "markdown",
    markdown: guarded,
    cappedLines,
    literal: literalRanges(guarded, options, work),
  };
}

/** `markdown` made safe to parse, or the reason to show it as plain text. */
export function guardMarkdown(markdown: string, options: GuardOptions = {}): GuardedMarkdown {
  const scanned = scanMarkdown(markdown, options);
  if (scanned.kind === "plain") return scanned;
  return { kind: "markdown", markdown: scanned.markdown, cappedLines: scanned.cappedLines };
}
