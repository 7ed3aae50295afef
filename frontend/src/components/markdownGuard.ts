/**
 * What a message's Markdown may cost before react-markdown sees it. The parser recurses once per
 * nested block quote or list (`">"` × 2,492 overflows the stack; in Chromium `">"` × 10,000 took
 * the page down) and resolves emphasis in time that grows quadratically with the number of
 * unmatched delimiters (`"*a"` × 25,000 took 20 s). One linear pass here:
 *
 * * caps nesting: on each line, the container markers (`>`, `-`, `*`, `+`, `1.`, `1)`) past
 *   {@link MAX_NESTING_DEPTH} are escaped, so the rest of the line is text; leading indentation
 *   past {@link MAX_INDENT_COLUMNS} columns is trimmed to it (indentation nests lists too);
 * * falls back to plain text (the raw message, shown as text) when the message is longer than
 *   {@link MAX_MARKDOWN_CHARS} or has more than {@link MAX_EMPHASIS_RUNS} runs of `*` / `_`.
 *
 * Fenced code is left alone (its lines are text to the parser). Counts are in UTF-16 code units,
 * as the parser counts.
 */

import { MAX_MARKDOWN_CHARS } from "../citations.js";

/** Block quotes and list items nested deeper than this on one line are written as text. */
export const MAX_NESTING_DEPTH = 32;
/** Leading indentation kept per line, in columns (a tab counts 4). */
export const MAX_INDENT_COLUMNS = 128;
/** More `*` / `_` runs than this, and the message is shown as plain text. */
export const MAX_EMPHASIS_RUNS = 2_000;
// A message longer than the citation finder parses as Markdown is shown as plain text whole,
// so the renderer and the finder draw the same line (one constant, in citations.ts).

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

export interface GuardOptions {
  readonly maxDepth?: number;
  readonly maxIndentColumns?: number;
  readonly maxEmphasisRuns?: number;
  readonly maxChars?: number;
  /** Counts characters examined (for the counted-work tests). */
  readonly work?: { steps: number };
}

const FENCE = /^ {0,3}(?:`{3,}|~{3,})/;

const isDigit = (code: number): boolean => code >= 48 && code <= 57;
const isBlank = (code: number | undefined): boolean =>
  code === undefined || code === 32 || code === 9 || code === 10 || code === 13;

/** `markdown` made safe to parse, or the reason to show it as plain text. */
export function guardMarkdown(markdown: string, options: GuardOptions = {}): GuardedMarkdown {
  const {
    maxDepth = MAX_NESTING_DEPTH,
    maxIndentColumns = MAX_INDENT_COLUMNS,
    maxEmphasisRuns = MAX_EMPHASIS_RUNS,
    maxChars = MAX_MARKDOWN_CHARS,
    work,
  } = options;
  if (markdown.length > maxChars) return { kind: "plain", text: markdown, reason: "too_long" };
  const lines = markdown.split("\n");
  const out: string[] = [];
  let cappedLines = 0;
  let emphasisRuns = 0;
  let steps = 0;
  let fence: string | null = null;
  for (const line of lines) {
    const opener = FENCE.exec(line);
    if (fence !== null) {
      // Inside fenced code: everything is text; only the closing fence matters.
      steps += line.length;
      if (opener !== null && opener[0].trim()[0] === fence && line.trim().length === opener[0].trim().length) {
        fence = null;
      }
      out.push(line);
      continue;
    }
    if (opener !== null) fence = opener[0].trim()[0] ?? null;

    let i = 0;
    let columns = 0;
    let depth = 0;
    let capped = false;
    let text = line;
    // Leading indentation.
    while (i < text.length && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) {
      columns += text.charCodeAt(i) === 9 ? 4 - (columns % 4) : 1;
      i += 1;
    }
    steps += i;
    if (columns > maxIndentColumns) {
      text = " ".repeat(maxIndentColumns) + text.slice(i);
      i = maxIndentColumns;
      capped = true;
    }
    // Container markers, each optionally followed by spaces.
    for (;;) {
      const code = text.charCodeAt(i);
      let end = -1; // index just past the marker
      let escapeAt = i; // where a backslash makes it text
      if (code === 62 /* > */) {
        end = i + 1;
      } else if ((code === 45 || code === 42 || code === 43) /* - * + */ && isBlank(text.charCodeAt(i + 1) || undefined)) {
        end = i + 1;
      } else if (isDigit(code)) {
        let j = i;
        while (j < text.length && j - i < 9 && isDigit(text.charCodeAt(j))) j += 1;
        const mark = text.charCodeAt(j);
        if ((mark === 46 || mark === 41) /* . ) */ && isBlank(text.charCodeAt(j + 1) || undefined)) {
          end = j + 1;
          escapeAt = j;
        }
        steps += j - i;
      }
      if (end === -1) break;
      depth += 1;
      if (depth > maxDepth) {
        text = `${text.slice(0, escapeAt)}\\${text.slice(escapeAt)}`;
        capped = true;
        break;
      }
      i = end;
      while (i < text.length && (text.charCodeAt(i) === 32 || text.charCodeAt(i) === 9)) i += 1;
      steps += i - end + 1;
    }
    if (capped) cappedLines += 1;
    // Emphasis delimiter runs on the rest of the line.
    let previous = -1;
    for (let k = i; k < text.length; k++) {
      const code = text.charCodeAt(k);
      const delimiter = code === 42 || code === 95; // * _
      if (delimiter && code !== previous) emphasisRuns += 1;
      previous = delimiter ? code : -1;
    }
    steps += text.length - i;
    out.push(text);
  }
  if (work !== undefined) work.steps += steps;
  if (emphasisRuns > maxEmphasisRuns) return { kind: "plain", text: markdown, reason: "too_much_emphasis" };
  return { kind: "markdown", markdown: cappedLines === 0 ? markdown : out.join("\n"), cappedLines };
}
