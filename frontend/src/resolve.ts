/**
 * Which evidence an assistant message may cite.
 *
 * The evidence for the message at `beforeIndex` is what the tool messages *before* it in the
 * loaded history carried and what re-verifies here: shared records through `readEnvelope` (any
 * tool message; id recomputed, handle and excerpt found in the same message's content) and native
 * RAGFlow records through `readNative` (only `knowledge_search` / `task` messages). Artifacts on
 * human and AI messages are ignored: the message type, not the artifact, decides.
 *
 * Cost model. A chat re-renders on every streamed token, with a new `messages` array whose old
 * message objects are unchanged, and a virtualized transcript draws only some of its answers. So:
 * * each `messages` array is scanned once (a `WeakMap` keyed by the array), in O(messages) pointer
 *   and `type` checks, and its tool messages are matched against the previous array's: when they
 *   are the same objects (or an extension of them) the existing source index is reused or
 *   extended, so a streamed token costs no validation and no index rebuild;
 * * a tool message is validated (SHA-256 ids, handles, excerpts) only when a lookup needs it, and
 *   once per object (results in a `WeakMap` keyed by the object): an index verifies its tool
 *   messages in order, on demand. `get(id)` of an id not yet seen verifies the next messages of
 *   the view until the id appears, so a citation of the first search of a long thread costs one
 *   validation, not one per tool message; a miss, `size` and `sources()` verify the whole view.
 *   Verifying in order keeps "first appearance wins" exact and means a later (possibly forged)
 *   message is never read before an earlier one that carries the same id;
 * * `collectSources(messages, i)` returns a cached {@link SourceLookup} for "the first k tool
 *   messages" — the same object on every token while nothing before `i` changed, which lets a
 *   memoized renderer skip the unchanged messages entirely. Its answers never change: verifying
 *   more messages only adds sources after the ones already known.
 *
 * Message objects must be treated as immutable (as React state is): a tool message changed in
 * place is not re-validated.
 */

import type { KnowledgeSource, ReadResult } from "./contract.js";
import { isRecordObject } from "./contract.js";
import { readEnvelope } from "./envelope.js";
import { EMPTY_LOOKUP, type ResolvedSource, type SourceLookup } from "./lookup.js";
import { readNative, type NativeReadResult } from "./native.js";
import { visibleText } from "./visible.js";

/** What one tool message yielded (validated once per message object). */
export interface MessageEvidence {
  readonly shared: ReadResult;
  readonly native: NativeReadResult;
  /** The verified sources of this message: shared first, then native. */
  readonly sources: readonly ResolvedSource[];
}

/** Counters for tests and diagnostics. */
export interface ResolverStats {
  /** Tool messages validated: at most one per distinct message object, and only those a lookup needed. */
  readonly validations: number;
  /** Source indexes built from scratch (a new history, a switched branch, a rewritten prefix). */
  readonly indexBuilds: number;
  /** `messages` arrays scanned (one per distinct array). */
  readonly historyScans: number;
}

export interface SourceResolverOptions {
  /** The shared-envelope reader (defaults to `readEnvelope`; inject to count or instrument). */
  readonly readShared?: (content: unknown, artifact: unknown) => ReadResult;
  /** The native-snapshot reader (defaults to `readNative`). */
  readonly readNative?: (content: unknown, artifact: unknown, toolName: unknown) => NativeReadResult;
  /** How many independent histories (e.g. chat panes) keep a warm index; default 4. */
  readonly maxHistories?: number;
  /** How many tool-message ids are remembered for re-parsed (`values`) frames; default 10,000. */
  readonly maxTrackedIds?: number;
}

export interface SourceResolver {
  /**
   * The verified evidence that the message at `beforeIndex` may cite: tool messages at indices
   * `0 … beforeIndex-1` of `messages` only. Never throws; non-message entries are skipped.
   */
  collectSources(messages: readonly unknown[], beforeIndex: number): SourceLookup;
  /** The (cached) evidence of one message; null when it is not a tool message. */
  evidenceOf(message: unknown): MessageEvidence | null;
  readonly stats: ResolverStats;
}

/** A plain, display-ready view of a verified source (what chips and panels show). */
export interface SourceDisplay {
  readonly kind: "shared" | "native";
  readonly id: string;
  readonly provider: string;
  /**
   * The verified title (shared `title`, native `document_name`) for display: invisible format
   * characters spelled `<U+XXXX>` (`visibleText`); null when the provider gave none.
   */
  readonly title: string | null;
  readonly excerpt: string;
  /** For display, like `title`. */
  readonly datasetName: string | null;
  readonly pages: readonly number[];
  /** An http(s) URL from the provider's evidence (shared records only). */
  readonly url: string | null;
  /** True when the provider said the excerpt is shorter than its text (native records). */
  readonly truncated: boolean;
}

const hasOwn = (value: object, key: string): boolean =>
  Object.prototype.hasOwnProperty.call(value, key);

function field(message: Record<string, unknown>, key: string): unknown {
  try {
    return message[key];
  } catch {
    return undefined;
  }
}

/**
 * True for a tool message in the LangGraph SDK / LangChain serialized shape (`type: "tool"`), or
 * an OpenAI-style `{role: "tool"}` without a `type`.
 */
export function isToolMessage(message: unknown): message is Record<string, unknown> {
  if (!isRecordObject(message)) return false;
  const type = field(message, "type");
  if (type === "tool") return true;
  return type === undefined && field(message, "role") === "tool";
}

// A source's display is a pure function of the (frozen) source: computed once per source object,
// however many chips, panels and re-renders show it.
const displays = new WeakMap<ResolvedSource, SourceDisplay>();

/** The display model of a verified source. */
export function describeSource(source: ResolvedSource): SourceDisplay {
  let display = displays.get(source);
  if (display === undefined) {
    display = Object.freeze(displayOf(source));
    displays.set(source, display);
  }
  return display;
}

function displayOf(source: ResolvedSource): SourceDisplay {
  if (source.kind === "shared") {
    const record = source.record;
    return {
      kind: "shared",
      id: source.id,
      provider: record.provider,
      title: visibleText(record.title),
      excerpt: record.excerpt,
      datasetName: record.dataset_name === undefined ? null : visibleText(record.dataset_name),
      pages: record.page === undefined ? [] : [record.page],
      url: record.url ?? null,
      truncated: false,
    };
  }
  const record = source.record;
  return {
    kind: "native",
    id: source.id,
    provider: record.provider,
    title: record.document_name.trim() === "" ? null : visibleText(record.document_name),
    excerpt: record.text,
    datasetName: record.dataset_name.trim() === "" ? null : visibleText(record.dataset_name),
    pages: record.pages,
    url: null,
    truncated: record.truncated,
  };
}

/**
 * An append-only list of tool messages; views see its first k. The messages are verified in
 * order and only as far as a lookup needs (`verified` is the verified prefix), so every index
 * below describes that prefix.
 */
class SourceStore {
  /** The tool message objects, in order (ordinal = position in this list). */
  readonly tools: unknown[] = [];
  /** How many of `tools` (a prefix) are verified and indexed below. */
  private verified = 0;
  /** Each distinct verified source, in order of first appearance (first appearance wins). */
  private readonly list: ResolvedSource[] = [];
  /** A source id's position in `list`. */
  private readonly positions = new Map<string, number>();
  /** `ends[k]` = number of distinct sources among the first k tool messages (k ≤ `verified`). */
  private readonly ends: number[] = [0];
  private readonly views = new Map<number, SourceLookup>();

  constructor(private readonly verify: (message: unknown) => MessageEvidence) {}

  append(message: unknown): void {
    this.tools.push(message);
  }

  view(count: number): SourceLookup {
    if (count <= 0) return EMPTY_LOOKUP;
    const cached = this.views.get(count);
    if (cached !== undefined) return cached;
    const store = this; // the frozen view's `size` getter has its own `this`
    let snapshot: readonly ResolvedSource[] | null = null;
    const view: SourceLookup = Object.freeze({
      get: (id: string): ResolvedSource | undefined => store.find(count, id),
      get size(): number {
        return store.sizeOf(count);
      },
      sources: () => (snapshot ??= Object.freeze(store.list.slice(0, store.sizeOf(count)))),
    });
    this.views.set(count, view);
    return view;
  }

  /** The source `id` among the first `count` tool messages, verifying no further than needed. */
  private find(count: number, id: string): ResolvedSource | undefined {
    let position = this.positions.get(id);
    if (position === undefined && this.verified < count) {
      this.verifyUntil(count, id);
      position = this.positions.get(id);
    }
    // A known id sits inside the verified prefix; it is in the view when it appeared before the
    // view's end (an id first carried by a later message is not visible to an earlier answer).
    const end = this.ends[Math.min(count, this.verified)] as number;
    return position !== undefined && position < end ? this.list[position] : undefined;
  }

  /** The number of distinct sources among the first `count` tool messages (all verified). */
  private sizeOf(count: number): number {
    this.verifyUntil(count, null);
    return this.ends[count] as number;
  }

  /** Verifies the next tool messages, in order, until the first `count` are or `id` has appeared. */
  private verifyUntil(count: number, id: string | null): void {
    const { tools, list, positions, ends } = this;
    while (this.verified < count) {
      const at = this.verified;
      const evidence = this.verify(tools[at]);
      if (this.verified !== at) continue; // a re-entrant (injected) reader already indexed it
      for (const source of evidence.sources) {
        if (positions.has(source.id)) continue; // first appearance wins; never replace evidence
        positions.set(source.id, list.length);
        list.push(source);
      }
      this.verified = at + 1;
      ends.push(list.length);
      if (id !== null && positions.has(id)) return;
    }
  }
}

/** One scanned `messages` array: its tool positions and the store holding their sources. */
interface HistoryIndex {
  readonly length: number;
  readonly positions: readonly number[];
  readonly store: SourceStore;
}

/** A resolver with its own caches (tests inject readers; apps normally share the default). */
export function createSourceResolver(options: SourceResolverOptions = {}): SourceResolver {
  const readShared = options.readShared ?? readEnvelope;
  const readNativeSnapshot = options.readNative ?? readNative;
  const maxHistories = Math.max(1, options.maxHistories ?? 4);
  const maxTrackedIds = Math.max(1, options.maxTrackedIds ?? DEFAULT_MAX_TRACKED_IDS);
  const evidence = new WeakMap<object, MessageEvidence>();
  const histories = new WeakMap<readonly unknown[], HistoryIndex>();
  let stores: SourceStore[] = [];
  const stats = { validations: 0, indexBuilds: 0, historyScans: 0 };

  // Tool messages by id: LangGraph `values` frames re-parse every message into a new object, so
  // an earlier object with the same id and deep-equal content, artifact and name stands in for it
  // (the verdict is a pure function of those). A changed message under the same id is validated
  // afresh, so a rewritten message can never inherit its predecessor's evidence.
  const byId = new Map<string, Record<string, unknown>>();

  function canonical(message: Record<string, unknown>): Record<string, unknown> {
    const id = field(message, "id");
    if (typeof id !== "string") return message;
    const known = byId.get(id);
    if (known === message) return message;
    if (known !== undefined && sameToolMessage(known, message)) return known;
    byId.delete(id);
    byId.set(id, message);
    if (byId.size > maxTrackedIds) byId.delete(byId.keys().next().value as string);
    return message;
  }

  function evidenceOf(message: unknown): MessageEvidence | null {
    if (!isToolMessage(message)) return null;
    const cached = evidence.get(message);
    if (cached !== undefined) return cached;
    const stand = canonical(message);
    const result = verify(stand);
    if (stand !== message) evidence.set(message, result);
    return result;
  }

  /**
   * The evidence of a tool message that is its own canonical object (what an index holds: it
   * was passed through `canonical` when its array was scanned, and is not passed again, so a
   * late verification never reshuffles `byId`).
   */
  function verify(message: unknown): MessageEvidence {
    const cached = evidence.get(message as object);
    if (cached !== undefined) return cached;
    stats.validations += 1;
    const tool = message as Record<string, unknown>;
    const content = hasOwn(tool, "content") ? field(tool, "content") : undefined;
    const artifact = hasOwn(tool, "artifact") ? field(tool, "artifact") : undefined;
    const name = hasOwn(tool, "name") ? field(tool, "name") : undefined;
    const shared = safeRead(() => readShared(content, artifact), SHARED_FAILED);
    const native = safeRead(() => readNativeSnapshot(content, artifact, name), NATIVE_FAILED);
    const sources: ResolvedSource[] = [];
    for (const record of shared.sources) sources.push(Object.freeze({ kind: "shared", id: record.id, record }));
    for (const record of native.sources) sources.push(Object.freeze({ kind: "native", id: record.id, record }));
    const result: MessageEvidence = Object.freeze({ shared, native, sources: Object.freeze(sources) });
    const first = evidence.get(message as object); // set by a re-entrant (injected) reader
    if (first !== undefined) return first;
    evidence.set(message as object, result);
    return result;
  }

  function storeFor(tools: readonly unknown[]): SourceStore {
    for (let s = 0; s < stores.length; s++) {
      const store = stores[s] as SourceStore;
      const known = store.tools;
      const common = Math.min(known.length, tools.length);
      let same = 0;
      while (same < common && known[same] === tools[same]) same += 1;
      if (same < common) continue; // diverged (another branch, a rewritten prefix)
      for (let i = known.length; i < tools.length; i++) store.append(tools[i]);
      if (s !== 0) stores = [store, ...stores.filter((other) => other !== store)];
      return store;
    }
    stats.indexBuilds += 1;
    const store = new SourceStore(verify);
    for (const tool of tools) store.append(tool);
    stores = [store, ...stores].slice(0, maxHistories);
    return store;
  }

  function indexOf(messages: readonly unknown[]): HistoryIndex {
    const cached = histories.get(messages);
    if (cached !== undefined && cached.length === messages.length) return cached;
    stats.historyScans += 1;
    const positions: number[] = [];
    const tools: unknown[] = [];
    const length = messages.length;
    for (let i = 0; i < length; i++) {
      const message = messages[i];
      if (isToolMessage(message)) {
        positions.push(i);
        tools.push(canonical(message));
      }
    }
    const index: HistoryIndex = { length, positions, store: storeFor(tools) };
    histories.set(messages, index);
    return index;
  }

  function collectSources(messages: readonly unknown[], beforeIndex: number): SourceLookup {
    if (!Array.isArray(messages)) return EMPTY_LOOKUP;
    const index = indexOf(messages);
    const limit = Number.isFinite(beforeIndex) ? Math.floor(beforeIndex) : beforeIndex > 0 ? Infinity : 0;
    return index.store.view(countBefore(index.positions, limit));
  }

  return {
    collectSources,
    evidenceOf,
    get stats(): ResolverStats {
      return { ...stats };
    },
  };
}

const DEFAULT_MAX_TRACKED_IDS = 10_000;
/** How deep two JSON-like values are compared before they count as different. */
const MAX_COMPARE_DEPTH = 64;

function sameToolMessage(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return (
    field(a, "type") === field(b, "type") &&
    field(a, "role") === field(b, "role") &&
    field(a, "name") === field(b, "name") &&
    deepEqual(field(a, "content"), field(b, "content"), 0) &&
    deepEqual(field(a, "artifact"), field(b, "artifact"), 0)
  );
}

/** Structural equality of JSON-like values (own enumerable keys; anything exotic is unequal). */
function deepEqual(a: unknown, b: unknown, depth: number): boolean {
  if (Object.is(a, b)) return true;
  if (depth > MAX_COMPARE_DEPTH || typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return false;
  }
  try {
    if (Array.isArray(a)) {
      if (!Array.isArray(b) || a.length !== b.length) return false;
      for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i], depth + 1)) return false;
      return true;
    }
    if (Array.isArray(b) || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
    const keysA = Object.keys(a);
    const keysB = Object.keys(b);
    if (keysA.length !== keysB.length) return false;
    for (const key of keysA) {
      if (!Object.prototype.hasOwnProperty.call(b, key)) return false;
      if (!deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], depth + 1)) {
        return false;
      }
    }
    return true;
  } catch {
    return false; // a throwing getter: never treat as equal
  }
}

const SHARED_FAILED: ReadResult = Object.freeze({
  sources: Object.freeze([]),
  rejected: Object.freeze([]),
  error: "internal_error",
});

const NATIVE_FAILED: NativeReadResult = Object.freeze({
  sources: Object.freeze([]),
  rejected: Object.freeze([]),
  error: "internal_error",
});

function safeRead<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback; // readers never throw; an injected one might
  }
}

/** How many sorted positions are `< limit`. */
function countBefore(positions: readonly number[], limit: number): number {
  let lo = 0;
  let hi = positions.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((positions[mid] as number) < limit) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The resolver behind {@link collectSources} and the components' default. */
export const defaultSourceResolver: SourceResolver = createSourceResolver();

/**
 * The verified evidence that the message at `beforeIndex` of `messages` may cite (tool messages
 * before it only), from the shared default resolver.
 */
export function collectSources(messages: readonly unknown[], beforeIndex: number): SourceLookup {
  return defaultSourceResolver.collectSources(messages, beforeIndex);
}

/** Why a citation renders as an inert label. */
export type InertReason = "evidence_not_loaded" | "bad_source_id" | "unsupported_destination";
