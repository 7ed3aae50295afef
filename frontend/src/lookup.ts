/**
 * Verified sources by id: what a citation resolves against.
 *
 * The reader-side half of `resolve.ts`, kept apart so the saved-evidence reader (and the
 * `/core` entry point) can build a lookup without loading the citation scanner.
 */

import type { KnowledgeSource } from "./contract.js";
import type { NativeSource } from "./native.js";

/** A shared (content-addressed) record that verified. */
export interface ResolvedSharedSource {
  readonly kind: "shared";
  /** The 32-hex source id. */
  readonly id: string;
  readonly record: KnowledgeSource;
}

/** A native RAGFlow record that verified. */
export interface ResolvedNativeSource {
  readonly kind: "native";
  /** The `<32 hex>-<n>` native id. */
  readonly id: string;
  readonly record: NativeSource;
}

/** Verified evidence a citation can resolve to. */
export type ResolvedSource = ResolvedSharedSource | ResolvedNativeSource;

/**
 * The verified sources visible to one message. `get` takes the id as it appears in a citation
 * (32 hex for shared, `<hex>-<n>` for native); the two id shapes never collide.
 */
export interface SourceLookup {
  get(id: string): ResolvedSource | undefined;
  /** Number of distinct verified sources visible. */
  readonly size: number;
  /** Every visible source, in order of first appearance in the history. */
  sources(): readonly ResolvedSource[];
}

const EMPTY_SOURCES: readonly ResolvedSource[] = Object.freeze([]);

/** The lookup of no sources (one object, so memoized renderers see it unchanged). */
export const EMPTY_LOOKUP: SourceLookup = Object.freeze({
  get: () => undefined,
  size: 0,
  sources: () => EMPTY_SOURCES,
});

/**
 * A lookup over sources the caller already trusts (e.g. evidence restored by its own verified
 * pipeline). First occurrence of an id wins. Prefer `collectSources` (`resolve.ts`), which
 * verifies.
 */
export function sourceLookupFrom(sources: Iterable<ResolvedSource>): SourceLookup {
  const map = new Map<string, ResolvedSource>();
  for (const source of sources) if (!map.has(source.id)) map.set(source.id, source);
  const list = Object.freeze([...map.values()]);
  return Object.freeze({ get: (id: string) => map.get(id), size: list.length, sources: () => list });
}
