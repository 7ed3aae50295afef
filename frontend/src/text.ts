/**
 * Code-point helpers (contracts/README.md §1).
 *
 * Contract lengths and offsets count Unicode code points: a surrogate pair is one code point and a
 * lone surrogate is one code point too, exactly as Python's `str` counts them. JavaScript strings
 * are UTF-16, so nothing here (or anywhere a contract length is checked) uses `String#length` as a
 * length in code points.
 */

/** Unicode `White_Space` as a regular-expression class body (§1 "blank"). */
export const WHITE_SPACE_CLASS =
  "\\t-\\r \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

/** C0 and C1 controls plus DEL as a regular-expression class body (§1 "control character"). */
export const CONTROL_CLASS = "\\u0000-\\u001f\\u007f-\\u009f";

/** Every Unicode `White_Space` code point (§1): a string made only of these is blank. */
export const WHITE_SPACE: ReadonlySet<string> = new Set([
  ..."\t\n\v\f\r \u0085\u00a0\u1680",
  ...Array.from({ length: 0x200b - 0x2000 }, (_, i) => String.fromCharCode(0x2000 + i)),
  ..."\u2028\u2029\u202f\u205f\u3000",
]);

/** Every control character (§1): U+0000–U+001F and U+007F–U+009F. */
export const CONTROL_CHARACTERS: ReadonlySet<string> = new Set([
  ...Array.from({ length: 0x20 }, (_, i) => String.fromCharCode(i)),
  ...Array.from({ length: 0xa0 - 0x7f }, (_, i) => String.fromCharCode(0x7f + i)),
]);

const NOT_WHITE_SPACE_RE = new RegExp(`[^${WHITE_SPACE_CLASS}]`, "u");
const CONTROL_RE = new RegExp(`[${CONTROL_CLASS}]`, "u");
// With the `u` flag a surrogate pair is one code point, so this class only matches lone halves.
const LONE_SURROGATE_RE = /[\ud800-\udfff]/u;

function isHigh(unit: number): boolean {
  return unit >= 0xd800 && unit <= 0xdbff;
}

function isLow(unit: number): boolean {
  return unit >= 0xdc00 && unit <= 0xdfff;
}

/** Number of code points in `s` (a lone surrogate counts once, a pair counts once). */
export function codePointLength(s: string): number {
  return codePointsBetween(s, 0, s.length);
}

/**
 * Number of code points in the UTF-16 range `[from, to)` of `s`. A pair straddling `to` counts as
 * one code point (its high half is inside the range).
 */
export function codePointsBetween(s: string, from: number, to: number): number {
  let count = 0;
  let i = from;
  while (i < to) {
    const unit = s.charCodeAt(i);
    i += isHigh(unit) && i + 1 < s.length && isLow(s.charCodeAt(i + 1)) ? 2 : 1;
    count += 1;
  }
  return count;
}

/** The code-point index of UTF-16 index `index` in `s` (the code points wholly before it). */
export function utf16ToCodePointIndex(s: string, index: number): number {
  const end = Math.max(0, Math.min(index, s.length));
  let count = 0;
  let i = 0;
  while (i < end) {
    const unit = s.charCodeAt(i);
    const width = isHigh(unit) && i + 1 < s.length && isLow(s.charCodeAt(i + 1)) ? 2 : 1;
    if (i + width > end) break;
    i += width;
    count += 1;
  }
  return count;
}

/** The UTF-16 index of code-point index `index` in `s` (clamped to the string). */
export function codePointToUtf16Index(s: string, index: number): number {
  let i = 0;
  let count = 0;
  while (i < s.length && count < index) {
    const unit = s.charCodeAt(i);
    i += isHigh(unit) && i + 1 < s.length && isLow(s.charCodeAt(i + 1)) ? 2 : 1;
    count += 1;
  }
  return i;
}

/**
 * `s` from code point `start` to code point `end` (exclusive), like Python's `s[start:end]` for
 * non-negative indices; `end` defaults to the end of the string.
 */
export function codePointSlice(s: string, start: number, end?: number): string {
  const from = codePointToUtf16Index(s, Math.max(0, start));
  if (end === undefined) return s.slice(from);
  if (end <= start) return "";
  return s.slice(from, codePointToUtf16Index(s, end));
}

/** True when `s` contains an unpaired UTF-16 surrogate. */
export function hasLoneSurrogate(s: string): boolean {
  return LONE_SURROGATE_RE.test(s);
}

/** True when every code point of `s` is `White_Space` (so the empty string is blank too). */
export function isBlank(s: string): boolean {
  return !NOT_WHITE_SPACE_RE.test(s);
}

/** True when `s` contains a control character (U+0000–U+001F, U+007F–U+009F). */
export function hasControl(s: string): boolean {
  return CONTROL_RE.test(s);
}

/**
 * Converts increasing UTF-16 indices of one string to code-point indices in a single pass. Each
 * call must pass an index at least as large as the previous one.
 */
export class CodePointCounter {
  private unit = 0;
  private count = 0;

  constructor(private readonly s: string) {}

  at(index: number): number {
    if (index < this.unit) {
      this.unit = 0;
      this.count = 0;
    }
    this.count += codePointsBetween(this.s, this.unit, index);
    this.unit = index;
    return this.count;
  }
}

/**
 * `s` with each `[start, end, replacement]` edit applied (UTF-16 offsets into `s`, sorted, not
 * overlapping): one join however many edits, so rewriting a message stays linear.
 */
export function applyEdits(s: string, edits: readonly (readonly [number, number, string])[]): string {
  if (edits.length === 0) return s;
  const out: string[] = [];
  let cursor = 0;
  for (const [start, end, replacement] of edits) {
    out.push(s.slice(cursor, start), replacement);
    cursor = end;
  }
  out.push(s.slice(cursor));
  return out.join("");
}
