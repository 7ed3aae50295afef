/**
 * An excerpt as a person reads it. Excerpts are verbatim slices of the source document, so they
 * carry its hard line breaks and its Markdown markers; shown as they are, a preview is noise. This
 * maps each character of the excerpt to what the preview shows for it: a soft line break (one that
 * wraps a paragraph) becomes a space, heading markers (`## `), fence lines and inline-code
 * backticks and `**` are not shown, and everything else — a code block's lines, list items, table
 * rows, blank lines between paragraphs, any HTML-looking text — is shown as it is, as text. The
 * mapping is per character, so a highlight given as offsets into the verified excerpt still covers
 * exactly the quoted characters. Linear in the excerpt.
 */

const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const HEADING = /^ {0,3}#{1,6}(?:[ \t]+|$)/;
/** A line that starts a block of its own, so the line break before it is not a soft wrap. */
const BLOCK_START = /^[ \t]*(?:#{1,6}(?:\s|$)|[-*+][ \t]|\d{1,9}[.)][ \t]|\||>|`{3,}|~{3,})/;
const INLINE_MARKERS = /`+|\*\*/g;

/** What the preview shows for `excerpt.slice(start, end)`. */
export type ReadableSlice = (start: number, end: number) => string;

export function readableExcerpt(excerpt: string): ReadableSlice {
  const shown: string[] = Array.from({ length: excerpt.length }, (_, i) => excerpt[i] as string);
  const lines: { start: number; end: number }[] = [];
  for (let start = 0; start <= excerpt.length; ) {
    const end = excerpt.indexOf("\n", start);
    lines.push({ start, end: end < 0 ? excerpt.length : end });
    if (end < 0) break;
    start = end + 1;
  }
  let fence: string | null = null;
  const hide = (from: number, to: number): void => {
    for (let i = from; i < to; i++) shown[i] = "";
  };
  lines.forEach((line, index) => {
    const text = excerpt.slice(line.start, line.end);
    const opening = FENCE.exec(text);
    if (fence !== null) {
      if (opening && opening[1]?.[0] === fence[0] && (opening[1]?.length ?? 0) >= fence.length) {
        hide(line.start, Math.min(line.end + 1, excerpt.length));
        fence = null;
      }
      return;
    }
    if (opening) {
      hide(line.start, Math.min(line.end + 1, excerpt.length));
      fence = opening[1] ?? null;
      return;
    }
    const heading = HEADING.exec(text);
    if (heading) hide(line.start, line.start + heading[0].length);
    for (const marker of text.matchAll(INLINE_MARKERS)) {
      hide(line.start + marker.index, line.start + marker.index + marker[0].length);
    }
    const next = lines[index + 1];
    if (next === undefined || heading || text.trim() === "" || text.trimStart().startsWith("|")) return;
    const following = excerpt.slice(next.start, next.end);
    if (following.trim() !== "" && !BLOCK_START.test(following)) shown[line.end] = " ";
  });
  return (start, end) => shown.slice(Math.max(0, start), Math.min(end, shown.length)).join("");
}
