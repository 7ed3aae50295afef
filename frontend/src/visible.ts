/**
 * Show what a title really says: invisible format characters made visible (contracts §8).
 *
 * A real file may be called `invoice_\u202Efdp.exe.md`: the RIGHT-TO-LEFT OVERRIDE makes it display
 * as "invoice_dm.exe.pdf". The contract keeps titles exactly as the provider gave them (refusing
 * them would make such a document uncitable, rewriting them would change what the record says), so
 * every display of a title, dataset name or citation label runs through `visibleText`, which spells
 * each bidi control and invisible format character as `<U+XXXX>`; components also isolate those
 * strings (`<bdi>`) so right-to-left text cannot reorder what surrounds it.
 */

/**
 * Code points shown as `<U+XXXX>` (inclusive ranges): the bidi embeddings, overrides, isolates and
 * marks, and the format characters that render as nothing. ZWNJ/ZWJ, the soft hyphen and
 * script-specific format characters are left alone. Mirrors `INVISIBLE_FORMAT_RANGES` in Python.
 */
export const INVISIBLE_FORMAT_RANGES: ReadonlyArray<readonly [number, number]> = Object.freeze([
  [0x061c, 0x061c],
  [0x180e, 0x180e],
  [0x200b, 0x200b],
  [0x200e, 0x200f],
  [0x202a, 0x202e],
  [0x2060, 0x2064],
  [0x2066, 0x206f],
  [0xfeff, 0xfeff],
  [0xfff9, 0xfffb],
  [0x1bca0, 0x1bca3],
  [0x1d173, 0x1d17a],
  [0xe0001, 0xe0001],
  [0xe0020, 0xe007f],
] as const);

const hex = (cp: number): string => `\\u{${cp.toString(16)}}`;

const INVISIBLE_RE = new RegExp(
  `[${INVISIBLE_FORMAT_RANGES.map(([low, high]) => (low === high ? hex(low) : `${hex(low)}-${hex(high)}`)).join("")}]`,
  "gu",
);

function spelled(ch: string): string {
  return `<U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, "0")}>`;
}

/** `text` with each invisible format character written as `<U+XXXX>` (for display only). */
export function visibleText(text: string): string {
  return text.replace(INVISIBLE_RE, spelled);
}
