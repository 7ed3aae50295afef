/**
 * Substring search with a guaranteed linear bound (Knuth–Morris–Pratt).
 *
 * `String#includes` is not linear in V8: a periodic needle such as `a^k b a^(k-1)` against `a^n`
 * costs O(n·m) (100 KB of content took two minutes). Hostile text is searched here instead: at most
 * 2m steps to build the table and 2n to scan. `searchWork` counts the steps so tests can bound the
 * work without timing anything.
 */

/** Characters examined by this module since the last reset (tests read and reset it). */
export const searchWork = { examined: 0 };

/** A needle prepared once and searched in any number of haystacks. */
export class LinearNeedle {
  private readonly failure: Int32Array;

  constructor(readonly needle: string) {
    const m = needle.length;
    const failure = new Int32Array(m);
    let k = 0;
    let steps = 0;
    for (let i = 1; i < m; i++) {
      const unit = needle.charCodeAt(i);
      while (k > 0 && needle.charCodeAt(k) !== unit) {
        k = failure[k - 1] ?? 0;
        steps++;
      }
      steps++;
      if (needle.charCodeAt(k) === unit) k++;
      failure[i] = k;
    }
    searchWork.examined += steps;
    this.failure = failure;
  }

  /** The first UTF-16 index of the needle in `haystack`, or -1. */
  indexIn(haystack: string): number {
    const { needle, failure } = this;
    const m = needle.length;
    const n = haystack.length;
    if (m === 0) return 0;
    let k = 0;
    let steps = 0;
    let found = -1;
    for (let i = 0; i < n; i++) {
      const unit = haystack.charCodeAt(i);
      while (k > 0 && needle.charCodeAt(k) !== unit) {
        k = failure[k - 1] ?? 0;
        steps++;
      }
      steps++;
      if (needle.charCodeAt(k) === unit && ++k === m) {
        found = i - m + 1;
        break;
      }
    }
    searchWork.examined += steps;
    return found;
  }
}

/** True when `text` holds `needle` at UTF-16 index `at` (at most `needle.length` steps). */
export function startsAt(text: string, needle: string, at: number): boolean {
  searchWork.examined += needle.length;
  return text.startsWith(needle, at);
}
