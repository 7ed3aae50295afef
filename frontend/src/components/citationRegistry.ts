/**
 * What one rendered message cites, gathered from its links as they render — so numbering and the
 * sources panel need no parse of their own: the host's Markdown renderer parses the message once,
 * and each citation link it draws tells the registry its source id.
 *
 * Numbering. A verified source's number is its rank among the message's verified sources in the
 * order their ids were first seen (claimed). Claims come from rendering, and React renders a tree
 * depth-first in document order, so on a first render that order is reading order. Claiming is
 * idempotent: a StrictMode double render, a re-render, a render React throws away and retries all
 * claim the same ids again and change nothing. A streamed message only grows, so ids seen later
 * sit later in the text, and numbers given out never change while the text grows. A source whose
 * evidence arrives after it was first cited is numbered in its claim position (later numbers
 * shift by one; every chip re-renders then anyway, because the evidence changed).
 *
 * Two cited sources with one title are told apart as `distinguishSources` does ("p. 3",
 * "excerpt 2"), among the cited sources in number order: an earlier chip's suffix may change when
 * a later one is claimed, which subscribers learn from {@link CitationRegistry.subscribe}.
 *
 * Malformed citations are counted as distinct (label, destination) pairs: a registry cannot tell
 * a second occurrence from a second render of the first one.
 *
 * Descriptions. The chips of one message whose short descriptions (provider and locators) read
 * alike are described by one hidden element (`descriptions()`, drawn once per message by
 * `KnowledgeMessage`), not one per chip: a message citing one provider 21 times draws one.
 */

import type { Citation } from "../citations.js";
import { EMPTY_LOOKUP, type ResolvedSource, type SourceLookup } from "../lookup.js";
import { describeSource } from "../resolve.js";
import { shortDescription } from "./description.js";
import { DEFAULT_LABELS, type KnowledgeLabels } from "./labels.js";

/** What the sources panel of one message shows (frozen; a new object whenever it changes). */
export interface CitedSources {
  /** Distinct verified sources, in number order (number = index + 1). */
  readonly sources: readonly ResolvedSource[];
  /** Suffixes that tell apart cited sources of one title, by id. */
  readonly suffixes: ReadonlyMap<string, string>;
  /** Distinct well-formed ids cited whose evidence is not in the loaded history. */
  readonly unresolved: number;
  /** Distinct malformed citations (label and destination). */
  readonly malformed: number;
}

/** The counts of {@link CitedSources}: what a closed panel shows. */
export interface CitedCounts {
  /** Distinct verified sources cited. */
  readonly sources: number;
  readonly unresolved: number;
  readonly malformed: number;
}

interface TitleEntry {
  readonly id: string;
  readonly pages: string;
}

/** One hidden description element: its id and its text. */
export type ChipDescription = readonly [id: string, text: string];

const NO_DESCRIPTIONS: readonly ChipDescription[] = Object.freeze([]);

/** The per-message citation registry (see the module comment). */
export class CitationRegistry {
  /** Distinct well-formed ids, in first-claim order. */
  private readonly order: string[] = [];
  private readonly seen = new Set<string>();
  private readonly malformedKeys = new Set<string>();
  private lookup: SourceLookup;
  private labels: KnowledgeLabels;
  /** Numbers for `lookup` (rebuilt when it changes), with the verified sources in order. */
  private numbers = new Map<string, number>();
  private verified: ResolvedSource[] = [];
  /** Verified sources grouped by displayed title (for suffixes), in number order. */
  private titles = new Map<string, TitleEntry[]>();
  private titleOf = new Map<string, string>();
  /** Description text → its element id, in first-claim order; and each verified id's element. */
  private descriptionIds = new Map<string, string>();
  private describedBy = new Map<string, string>();
  private descriptionList: ChipDescription[] = [];
  private descriptionSnapshot: readonly ChipDescription[] = NO_DESCRIPTIONS;
  private version = 0;
  private published = 0;
  private cached: { version: number; cited: CitedSources } | null = null;
  private cachedCounts: { version: number; counts: CitedCounts } | null = null;
  private readonly listeners = new Set<() => void>();
  private scheduled = false;

  /**
   * `descriptionPrefix` starts the ids of the message's description elements: unique in the
   * document (a `useId()`), so two messages' descriptions never share an id.
   */
  constructor(
    lookup: SourceLookup = EMPTY_LOOKUP,
    labels: KnowledgeLabels = DEFAULT_LABELS,
    private readonly descriptionPrefix = "dk-description",
  ) {
    this.lookup = lookup;
    this.labels = labels;
  }

  /** A registry that has already seen `citations` (one parse's list), in document order. */
  static of(lookup: SourceLookup, citations: readonly Citation[], labels?: KnowledgeLabels): CitationRegistry {
    const registry = new CitationRegistry(lookup, labels);
    for (const citation of citations) {
      if ((citation.kind === "shared" || citation.kind === "native") && citation.source_id !== null) {
        registry.claim(citation.source_id);
      } else if (citation.kind === "malformed") {
        registry.claimMalformed(citation.raw_label, citation.href);
      }
    }
    return registry;
  }

  /** The evidence (and labels) the message renders against; a new lookup renumbers. */
  update(lookup: SourceLookup, labels: KnowledgeLabels): void {
    if (lookup === this.lookup && labels === this.labels) return;
    this.lookup = lookup;
    this.labels = labels;
    this.numbers = new Map();
    this.verified = [];
    this.titles = new Map();
    this.titleOf = new Map();
    this.descriptionIds = new Map();
    this.describedBy = new Map();
    this.descriptionList = [];
    this.descriptionSnapshot = NO_DESCRIPTIONS;
    for (const id of this.order) this.number(id);
    this.changed();
  }

  /** The evidence the message renders against. */
  get sources(): SourceLookup {
    return this.lookup;
  }

  /** Records that the message cites `id` (well-formed); returns its verified source, if any. */
  claim(id: string): ResolvedSource | undefined {
    if (!this.seen.has(id)) {
      this.seen.add(id);
      this.order.push(id);
      this.number(id);
      this.changed();
    }
    return this.lookup.get(id);
  }

  /** Records a malformed citation (its label as written and its destination). */
  claimMalformed(label: string, href: string): void {
    const key = `${label}\u0000${href}`;
    if (this.malformedKeys.has(key)) return;
    this.malformedKeys.add(key);
    this.changed();
  }

  /** The 1-based number of a claimed, verified id. */
  numberOf(id: string): number | undefined {
    return this.numbers.get(id);
  }

  /** What tells `id` apart from another cited source of the same title, if one exists. */
  suffixOf(id: string): string | undefined {
    const title = this.titleOf.get(id);
    const group = title === undefined ? undefined : this.titles.get(title);
    if (group === undefined || group.length < 2) return undefined;
    const pages = group.map((entry) => entry.pages);
    const pagesTell = pages.every((page) => page !== "") && new Set(pages).size === pages.length;
    const index = group.findIndex((entry) => entry.id === id);
    return pagesTell ? this.labels.pageShort(pages[index] as string) : this.labels.excerptNumber(index + 1);
  }

  /**
   * The message's description elements, in first-claim order (same array until one is added; a
   * snapshot for `useSyncExternalStore`).
   */
  readonly descriptions = (): readonly ChipDescription[] => {
    this.describe();
    if (this.descriptionSnapshot.length !== this.descriptionList.length) {
      this.descriptionSnapshot = Object.freeze([...this.descriptionList]);
    }
    return this.descriptionSnapshot;
  };

  /**
   * What a chip of `id` shows besides its source: number, suffix and description element, as one
   * comparable string.
   */
  viewOf(id: string): string {
    this.describe();
    return `${this.numbers.get(id) ?? ""}\u0000${this.suffixOf(id) ?? ""}\u0000${this.describedBy.get(id) ?? ""}`;
  }

  /**
   * What a closed panel shows: the counts alone, no per-source work (same object until something
   * changes; a snapshot for `useSyncExternalStore`).
   */
  counts(): CitedCounts {
    if (this.cachedCounts !== null && this.cachedCounts.version === this.version) return this.cachedCounts.counts;
    const counts: CitedCounts = Object.freeze({
      sources: this.verified.length,
      unresolved: this.order.length - this.verified.length,
      malformed: this.malformedKeys.size,
    });
    this.cachedCounts = { version: this.version, counts };
    return counts;
  }

  /** The panel's view (same object until something changes). */
  cited(): CitedSources {
    if (this.cached !== null && this.cached.version === this.version) return this.cached.cited;
    const suffixes = new Map<string, string>();
    for (const source of this.verified) {
      const suffix = this.suffixOf(source.id);
      if (suffix !== undefined) suffixes.set(source.id, suffix);
    }
    const cited: CitedSources = Object.freeze({
      sources: Object.freeze([...this.verified]),
      suffixes,
      unresolved: this.order.length - this.verified.length,
      malformed: this.malformedKeys.size,
    });
    this.cached = { version: this.version, cited };
    return cited;
  }

  /** For `useSyncExternalStore`: called (after the render that changed it) on every change. */
  readonly subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  };

  private number(id: string): void {
    const source = this.lookup.get(id);
    if (source === undefined || this.numbers.has(id)) return;
    this.verified.push(source);
    this.numbers.set(id, this.verified.length);
    const display = describeSource(source);
    const title = display.title ?? "";
    const group = this.titles.get(title) ?? [];
    group.push({ id, pages: display.pages.join(", ") });
    this.titles.set(title, group);
    this.titleOf.set(id, title);
  }

  // Descriptions are assigned on demand, in number order (so in first-claim order): only the glue
  // asks for them; `KnowledgeMarkdown`'s registry never pays for them.
  private describe(): void {
    const { verified, descriptionIds, describedBy } = this;
    for (let index = describedBy.size; index < verified.length; index++) {
      const source = verified[index] as ResolvedSource;
      const text = shortDescription(describeSource(source), this.labels);
      let element = descriptionIds.get(text);
      if (element === undefined) {
        element = `${this.descriptionPrefix}-${descriptionIds.size}`;
        descriptionIds.set(text, element);
        this.descriptionList.push(Object.freeze([element, text] as const));
      }
      describedBy.set(source.id, element);
    }
  }

  // Claims happen while React renders: listeners (other components' state) are told afterwards,
  // in a microtask, never during the render itself.
  private changed(): void {
    this.version += 1;
    if (this.scheduled || this.listeners.size === 0) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.publish();
    });
  }

  /** Tells the listeners about changes since the last call (the microtask does it too). */
  publish(): void {
    if (this.published === this.version) return;
    this.published = this.version;
    for (const listener of [...this.listeners]) listener();
  }
}
