/**
 * Which part of an excerpt a cited sentence quotes: the longest run of consecutive words the two
 * share, so the preview can scroll to it and highlight it. Words compare case-insensitively by
 * letters and digits only. The work is linear in the excerpt plus a constant: only the sentence's
 * last words count, each excerpt word keeps at most a few positions, and a run is measured only
 * from its first word.
 */

/** A quote shorter than this many words is a coincidence, not a quote. */
export const MIN_QUOTE_WORDS = 4;
/** Positions remembered per distinct excerpt word (repetitive text cannot make this quadratic). */
export const MAX_POSITIONS_PER_WORD = 8;
/** Characters of the excerpt considered. */
export const MAX_QUOTE_SCAN = 100_000;
/** Words of the sentence considered (its last ones: the part right before the chip). */
export const MAX_SENTENCE_WORDS = 64;

export interface QuoteSpan {
  /** UTF-16 offsets into the excerpt: `excerpt.slice(start, end)` is the quoted part. */
  readonly start: number;
  readonly end: number;
}

interface Word {
  readonly text: string;
  readonly start: number;
  readonly end: number;
}

const WORD = /[\p{L}\p{N}]+/gu;

function words(text: string): Word[] {
  const found: Word[] = [];
  for (const match of text.matchAll(WORD)) {
    found.push({ text: match[0].toLowerCase(), start: match.index, end: match.index + match[0].length });
  }
  return found;
}

/** The span of `excerpt` that `sentence` quotes (≥ `minWords` consecutive words), or null. */
export function findQuote(
  sentence: string,
  excerpt: string,
  {
    minWords = MIN_QUOTE_WORDS,
    work,
  }: {
    readonly minWords?: number;
    /** Counts word comparisons (for the counted-work tests). */
    readonly work?: { steps: number };
  } = {},
): QuoteSpan | null {
  const said = words(sentence.slice(-MAX_SENTENCE_WORDS * 40)).slice(-MAX_SENTENCE_WORDS);
  const source = words(excerpt.slice(0, MAX_QUOTE_SCAN));
  let steps = 0;
  if (said.length < minWords || source.length < minWords) return null;
  const positions = new Map<string, number[]>();
  for (let j = 0; j < source.length; j++) {
    const word = (source[j] as Word).text;
    const list = positions.get(word);
    if (list === undefined) positions.set(word, [j]);
    else if (list.length < MAX_POSITIONS_PER_WORD) list.push(j);
  }
  let bestLength = 0;
  let bestStart = -1;
  for (let i = 0; i < said.length; i++) {
    const list = positions.get((said[i] as Word).text);
    if (list === undefined) continue;
    for (const j of list) {
      // A run that could extend one word to the left was already measured from its start.
      if (i > 0 && j > 0 && (said[i - 1] as Word).text === (source[j - 1] as Word).text) continue;
      let length = 1;
      steps += 1;
      while (
        i + length < said.length &&
        j + length < source.length &&
        (said[i + length] as Word).text === (source[j + length] as Word).text
      ) {
        length += 1;
        steps += 1;
      }
      if (length > bestLength) {
        bestLength = length;
        bestStart = j;
      }
    }
  }
  if (work !== undefined) work.steps += steps + source.length;
  if (bestLength < minWords) return null;
  return {
    start: (source[bestStart] as Word).start,
    end: (source[bestStart + bestLength - 1] as Word).end,
  };
}
