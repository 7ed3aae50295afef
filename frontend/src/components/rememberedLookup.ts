/**
 * "A chip that resolved never flips back": a lookup that keeps answering for every id it once
 * resolved. Its own module so the thread glue (`KnowledgeMessage`) takes it without
 * `useCitationLookup`'s other evidence sources (saved batch evidence and its reader).
 */

import { useMemo, useRef } from "react";

import type { ResolvedSource, SourceLookup } from "../lookup.js";

/** A lookup that remembers every id it resolved, and keeps answering for it. */
export function remembering(base: SourceLookup, memory: Map<string, ResolvedSource>): SourceLookup {
  return Object.freeze({
    get(id: string): ResolvedSource | undefined {
      const found = base.get(id);
      if (found !== undefined) {
        if (!memory.has(id)) memory.set(id, found);
        return found;
      }
      return memory.get(id);
    },
    // A getter: `base` may verify its whole history to count (resolve.ts verifies lazily).
    get size(): number {
      return base.size;
    },
    sources: () => base.sources(),
  });
}

interface Held {
  readonly key: unknown;
  readonly ids: Map<string, ResolvedSource>;
}

/**
 * `base`, remembering what it resolved for as long as `key` (the rendered message's identity)
 * stays the same; stable while `base` and `key` are, so memoized children skip re-rendering.
 */
export function useRememberedLookup(base: SourceLookup, key: unknown): SourceLookup {
  const held = useRef<Held | null>(null);
  if (held.current === null || !Object.is(held.current.key, key)) held.current = { key, ids: new Map() };
  const ids = held.current.ids;
  return useMemo(() => remembering(base, ids), [base, ids]);
}
