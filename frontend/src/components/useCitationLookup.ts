/**
 * The evidence a rendered message may cite, with the "a resolved chip never flips back" memory.
 */

import { useMemo, useRef } from "react";

import { isRecordObject } from "../contract.js";
import {
  defaultSourceResolver,
  type ResolvedSource,
  type SourceLookup,
  type SourceResolver,
} from "../resolve.js";

/** Evidence from the loaded history: the tool messages before `messageIndex`. */
export interface HistorySourceProps {
  /** The loaded conversation (LangGraph SDK messages or any JSON-like shape). Treat as immutable. */
  readonly messages: readonly unknown[];
  /** The index of the message being rendered; only tool messages before it are evidence. */
  readonly messageIndex: number;
  /** The resolver whose caches to use (default: the shared `defaultSourceResolver`). */
  readonly resolver?: SourceResolver | undefined;
  readonly sources?: undefined;
}

/** Evidence the caller already resolved (e.g. `collectSources(...)` or `sourceLookupFrom(...)`). */
export interface LookupSourceProps {
  readonly sources: SourceLookup;
  readonly messages?: undefined;
  readonly messageIndex?: undefined;
  readonly resolver?: undefined;
}

export type CitationSourceProps = (HistorySourceProps | LookupSourceProps) & {
  /**
   * Identifies the rendered message for the resolved-id memory (default: the message's `id` when
   * it is a string, else `messageIndex`). When it changes, the memory starts afresh.
   */
  readonly messageKey?: string | number | undefined;
};

function defaultKey(props: CitationSourceProps): string | number | null {
  if (props.messageKey !== undefined) return props.messageKey;
  if (props.messages === undefined) return null;
  const message: unknown = props.messages[props.messageIndex];
  if (isRecordObject(message)) {
    const id = message["id"];
    if (typeof id === "string") return `id:${id}`;
  }
  return props.messageIndex;
}

/** A lookup that remembers every id it resolved, and keeps answering for it. */
function remembering(base: SourceLookup, memory: Map<string, ResolvedSource>): SourceLookup {
  return Object.freeze({
    get(id: string): ResolvedSource | undefined {
      const found = base.get(id);
      if (found !== undefined) {
        if (!memory.has(id)) memory.set(id, found);
        return found;
      }
      return memory.get(id);
    },
    size: base.size,
    sources: () => base.sources(),
  });
}

/**
 * The lookup a message renders against. A citation that resolved once keeps resolving for the
 * same message (the same `messageKey`), even if a later update of the history no longer shows
 * its evidence (a stream frame that momentarily lacks it, a trimmed history): a chip never flips
 * back to "evidence not loaded" while the message streams. The returned object is stable while
 * the evidence before the message is unchanged, so memoized children skip re-rendering.
 */
export function useCitationLookup(props: CitationSourceProps): SourceLookup {
  const base =
    props.messages === undefined
      ? props.sources
      : (props.resolver ?? defaultSourceResolver).collectSources(props.messages, props.messageIndex);
  const key = defaultKey(props);
  const memoryRef = useRef<{ key: unknown; memory: Map<string, ResolvedSource> } | null>(null);
  if (memoryRef.current === null || !Object.is(memoryRef.current.key, key)) {
    memoryRef.current = { key, memory: new Map() };
  }
  const memory = memoryRef.current.memory;
  return useMemo(() => remembering(base, memory), [base, memory]);
}
