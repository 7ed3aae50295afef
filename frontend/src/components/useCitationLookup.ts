/**
 * The evidence a rendered message may cite, with the "a resolved chip never flips back" memory.
 */

import { useMemo, useRef } from "react";

import { isRecordObject } from "../contract.js";
import type { ResolvedSource, SourceLookup } from "../lookup.js";
import { defaultSourceResolver, type SourceResolver } from "../resolve.js";
import { savedEvidenceLookup } from "../savedEvidence.js";
import { remembering } from "./rememberedLookup.js";

/** Evidence from the loaded history: the tool messages before `messageIndex`. */
export interface HistorySourceProps {
  /** The loaded conversation (LangGraph SDK messages or any JSON-like shape). Treat as immutable. */
  readonly messages: readonly unknown[];
  /** The index of the message being rendered; only tool messages before it are evidence. */
  readonly messageIndex: number;
  /** The resolver whose caches to use (default: the shared `defaultSourceResolver`). */
  readonly resolver?: SourceResolver | undefined;
  readonly sources?: undefined;
  readonly savedEvidence?: undefined;
}

/** Evidence the caller already resolved (e.g. `collectSources(...)` or `sourceLookupFrom(...)`). */
export interface LookupSourceProps {
  readonly sources: SourceLookup;
  readonly messages?: undefined;
  readonly messageIndex?: undefined;
  readonly resolver?: undefined;
  readonly savedEvidence?: undefined;
}

/**
 * A saved batch report rendered against its own saved evidence only (DeerFlow's durable export
 * payload `{"knowledge_sources": {"version": 1, "sources": [...], "omitted_count": n}}`, read by
 * `readSavedEvidence` with the rendered Markdown as the stored report). Never mixed with a
 * conversation's sources; evidence that breaks a rule is rejected whole, so every chip is inert.
 */
export interface SavedEvidenceSourceProps {
  readonly savedEvidence: unknown;
  readonly messages?: undefined;
  readonly messageIndex?: undefined;
  readonly resolver?: undefined;
  readonly sources?: undefined;
}

export type CitationSourceProps = (
  | HistorySourceProps
  | LookupSourceProps
  | SavedEvidenceSourceProps
) & {
  /**
   * Also identifies the rendered message for the resolved-id memory: when it changes, the memory
   * starts afresh. With `messages`, the memory is in any case kept only while the rendered message
   * is the same message (see {@link useCitationLookup}).
   */
  readonly messageKey?: string | number | undefined;
};

const MAX_EQUAL_DEPTH = 64;

/** Structural equality of JSON-like values (depth-bounded: deeper values compare unequal). */
function deepEqual(a: unknown, b: unknown, depth = 0): boolean {
  if (Object.is(a, b)) return true;
  if (depth > MAX_EQUAL_DEPTH || typeof a !== "object" || typeof b !== "object") return false;
  if (a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) {
    return a.length === b.length && a.every((item, i) => deepEqual(item, b[i], depth + 1));
  }
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  const keys = Object.keys(left);
  if (keys.length !== Object.keys(right).length) return false;
  return keys.every(
    (key) => Object.prototype.hasOwnProperty.call(right, key) && deepEqual(left[key], right[key], depth + 1),
  );
}

function field(message: Record<string, unknown>, key: string): unknown {
  try {
    return message[key];
  } catch {
    return undefined;
  }
}

/**
 * True when `next` is the message `previous` was: the same object, or the same `type` and `id`
 * (both absent counts as the same) with deep-equal `content` — so a history re-parsed from JSON
 * keeps its memory, while another conversation's message at the same index does not.
 */
function sameMessage(previous: unknown, next: unknown): boolean {
  if (Object.is(previous, next)) return true;
  if (!isRecordObject(previous) || !isRecordObject(next)) return false;
  return (
    field(previous, "type") === field(next, "type") &&
    field(previous, "id") === field(next, "id") &&
    deepEqual(field(previous, "content"), field(next, "content"))
  );
}

interface Memory {
  readonly key: unknown;
  readonly message: unknown;
  readonly ids: Map<string, ResolvedSource>;
}

const NO_MESSAGE = Symbol("no message");

/**
 * The lookup a message renders against. A citation that resolved once keeps resolving while the
 * rendered message stays the same message — the same object, or (for a history re-parsed from
 * JSON) the same `type` and `id` with deep-equal `content` — even if a later update of the history
 * no longer shows its evidence (a trimmed window): a chip never flips back to "evidence not
 * loaded". The memory is dropped as soon as `messages[messageIndex]` is another message (a
 * conversation or branch switch, including histories without ids) or `messageKey` changes. With
 * `savedEvidence`, citations resolve against that saved evidence only, and nothing is remembered.
 * The returned object is stable while the evidence before the message is unchanged, so memoized
 * children skip re-rendering.
 *
 * @param report The rendered Markdown: the stored report a saved payload's records must be cited in.
 */
export function useCitationLookup(props: CitationSourceProps, report = ""): SourceLookup {
  const saved = props.savedEvidence;
  const savedLookup = useMemo(
    () => (saved === undefined ? null : savedEvidenceLookup(report, saved)),
    [saved, report],
  );
  const base =
    savedLookup ??
    (props.messages === undefined
      ? (props.sources as SourceLookup)
      : (props.resolver ?? defaultSourceResolver).collectSources(props.messages, props.messageIndex));
  const history = props.messages !== undefined;
  const message: unknown = history ? props.messages[props.messageIndex] : NO_MESSAGE;
  const key = props.messageKey ?? null;
  const memoryRef = useRef<Memory | null>(null);
  let memory = memoryRef.current;
  if (
    memory === null ||
    !Object.is(memory.key, key) ||
    (history && (message === undefined || !sameMessage(memory.message, message)))
  ) {
    memory = { key, message, ids: new Map() };
  } else if (memory.message !== message) {
    memory = { ...memory, message }; // the next frame is compared with this one
  }
  memoryRef.current = memory;
  const ids = memory.ids;
  return useMemo(
    () => (savedLookup !== null ? savedLookup : remembering(base, ids)),
    [savedLookup, base, ids],
  );
}
