/**
 * Read the shared evidence envelope (contracts/README.md §1 and §3).
 *
 * Every artifact is hostile: it may come from a caller, a replayed checkpoint or a buggy tool. The
 * reader re-derives everything it trusts — the id from the record's content, the handle and the
 * excerpt from the message's own text — reads each property once, returns fresh frozen records,
 * and never throws.
 */

import {
  ENVELOPE_VERSION,
  ID_HEX_CHARS,
  KNOWLEDGE_SOURCES_KEY,
  MAX_SOURCES,
  RETRIEVAL_SOURCES_KEY,
  VERSION_KEY,
  isRecordObject,
  isValidDatasetName,
  isValidExcerpt,
  isValidId,
  isValidPage,
  isValidProvider,
  isValidTitle,
  isValidUrl,
  type EnvelopeErrorCode,
  type KnowledgeSource,
  type ReadResult,
  type Rejection,
  type RejectionReason,
  type SourceKey,
} from "./contract.js";
import { SHARED_HANDLE_PREFIX } from "./handles.js";
import { sourceId } from "./ids.js";
import { LinearNeedle, searchWork, startsAt } from "./substring.js";

const EMPTY: ReadResult = Object.freeze({
  sources: Object.freeze([]),
  rejected: Object.freeze([]),
  error: null,
});

function failed(error: EnvelopeErrorCode): ReadResult {
  return Object.freeze({ sources: Object.freeze([]), rejected: Object.freeze([]), error });
}

const hasOwn = (value: object, key: string): boolean =>
  Object.prototype.hasOwnProperty.call(value, key);

/** The handle a message's text must contain for the source `id`. */
export function handleFor(id: string): string {
  return SHARED_HANDLE_PREFIX + id;
}

/**
 * The text a handle or an excerpt may be found in: a string content is one part; a list content
 * contributes each string item and each object item with `type: "text"` and a string `text`.
 */
export function textParts(content: unknown): string[] {
  if (typeof content === "string") return [content];
  if (!Array.isArray(content)) return [];
  const parts: string[] = [];
  const length = content.length;
  for (let i = 0; i < length; i++) {
    const item: unknown = content[i];
    if (typeof item === "string") {
      parts.push(item);
    } else if (isRecordObject(item) && hasOwn(item, "type") && item["type"] === "text") {
      const text = hasOwn(item, "text") ? item["text"] : undefined;
      if (typeof text === "string") parts.push(text);
    }
  }
  return parts;
}

/** Verified shared records of one tool message (§3). Never throws. */
export function readEnvelope(content: unknown, artifact: unknown): ReadResult {
  try {
    return read(content, artifact);
  } catch {
    // Defence in depth (only reachable through exotic objects such as throwing proxies): nothing
    // that could not be read is trusted. Mirrors the Python reader.
    return failed("internal_error");
  }
}

function read(content: unknown, artifact: unknown): ReadResult {
  if (!isRecordObject(artifact)) return EMPTY;
  const hasPrimary = hasOwn(artifact, KNOWLEDGE_SOURCES_KEY);
  const hasSecondary = hasOwn(artifact, RETRIEVAL_SOURCES_KEY);
  if (!hasPrimary && !hasSecondary) return EMPTY;
  const primary = hasPrimary ? artifact[KNOWLEDGE_SOURCES_KEY] : undefined;
  const secondary = hasSecondary ? artifact[RETRIEVAL_SOURCES_KEY] : undefined;
  if (hasPrimary && !Array.isArray(primary) && !isRecordObject(primary)) {
    return failed("not_an_array");
  }
  if (hasSecondary && !Array.isArray(secondary)) return failed("not_an_array");

  const arrays: Array<readonly [SourceKey, readonly unknown[]]> = [];
  if (Array.isArray(primary)) arrays.push([KNOWLEDGE_SOURCES_KEY, primary]);
  if (Array.isArray(secondary)) arrays.push([RETRIEVAL_SOURCES_KEY, secondary]);
  if (arrays.length === 0) return EMPTY;

  const version = hasOwn(artifact, VERSION_KEY) ? artifact[VERSION_KEY] : undefined;
  if (version !== ENVELOPE_VERSION) return failed("bad_version");
  let total = 0;
  for (const [, records] of arrays) total += records.length;
  if (total > MAX_SOURCES) return failed("too_many_records");

  const text = new MessageText(textParts(content));
  const accepted = new Map<string, KnowledgeSource>();
  const rejected: Rejection[] = [];
  for (const [key, records] of arrays) {
    const length = records.length;
    for (let index = 0; index < length; index++) {
      const outcome = verify(records[index], text, accepted);
      if (typeof outcome === "string") {
        rejected.push(Object.freeze({ key, index, reason: outcome }));
      } else {
        accepted.set(outcome.id, outcome);
      }
    }
  }
  return Object.freeze({
    sources: Object.freeze([...accepted.values()]),
    rejected: Object.freeze(rejected),
    error: null,
  });
}

const ABSENT: unique symbol = Symbol("absent");

/**
 * The record as a fresh frozen object in wire field order, each property read once (so later
 * changes to the artifact, or a getter answering differently, cannot alter it); null when any
 * field rule of §1 fails: not an object, an unknown or missing field, a bad value.
 */
function snapshot(record: unknown): KnowledgeSource | null {
  if (!isRecordObject(record)) return null;
  let id: unknown = ABSENT;
  let provider: unknown = ABSENT;
  let title: unknown = ABSENT;
  let excerpt: unknown = ABSENT;
  let datasetName: unknown = ABSENT;
  let url: unknown = ABSENT;
  let page: unknown = ABSENT;
  // An unknown key is refused before it is read (so `__proto__` is never assigned anywhere).
  for (const key of Object.keys(record)) {
    switch (key) {
      case "id":
        id = record[key];
        break;
      case "provider":
        provider = record[key];
        break;
      case "title":
        title = record[key];
        break;
      case "excerpt":
        excerpt = record[key];
        break;
      case "dataset_name":
        datasetName = record[key];
        break;
      case "url":
        url = record[key];
        break;
      case "page":
        page = record[key];
        break;
      default:
        return null;
    }
  }
  if (
    !isValidId(id) ||
    !isValidProvider(provider) ||
    !isValidTitle(title) ||
    !isValidExcerpt(excerpt) ||
    (datasetName !== ABSENT && !isValidDatasetName(datasetName)) ||
    (url !== ABSENT && !isValidUrl(url)) ||
    (page !== ABSENT && !isValidPage(page))
  ) {
    return null;
  }
  const out: Record<string, unknown> = { id, provider, title, excerpt };
  if (datasetName !== ABSENT) out["dataset_name"] = datasetName;
  if (url !== ABSENT) out["url"] = url;
  if (page !== ABSENT) out["page"] = page;
  return Object.freeze(out) as unknown as KnowledgeSource;
}

function verify(
  record: unknown,
  text: MessageText,
  accepted: ReadonlyMap<string, KnowledgeSource>,
): KnowledgeSource | RejectionReason {
  let source: KnowledgeSource | null;
  try {
    source = snapshot(record);
  } catch {
    return "bad_field";
  }
  if (source === null) return "bad_field";
  let recomputed: string;
  try {
    recomputed = sourceId(source);
  } catch {
    return "bad_field";
  }
  if (recomputed !== source.id) return "id_mismatch";
  if (accepted.has(source.id)) return "duplicate";
  if (!text.hasHandle(source.id)) return "handle_missing";
  if (!text.hasExcerpt(source.id, source.excerpt)) return "excerpt_missing";
  return source;
}

// Writers put the excerpt at the start of the line after its handle's line (or after one locator
// line), so the common case is settled near the record's first handle with a bounded check.
const EXCERPT_WINDOW = 4_096;
const NEAR_LINES = 2;
const NEWLINE = 0x0a;

const isLowerHex = (unit: number): boolean => (unit >= 0x30 && unit <= 0x39) || (unit >= 0x61 && unit <= 0x66);

/**
 * The message's text parts, each record's first handle, and every excerpt looked up so far. A
 * handle or an excerpt must lie wholly inside one part. Each distinct excerpt is searched at most
 * once, whatever the number of records carrying it or of handle occurrences, so a read costs
 * O(content × distinct excerpts + artifact) characters examined, never multiplied by handles.
 */
class MessageText {
  /** A handle's ordinal by id (its first occurrence), indexing the two arrays below. */
  private readonly firstHandle = new Map<string, number>();
  private readonly handlePart: number[] = [];
  /** UTF-16 index just past the handle's id. */
  private readonly handleEnd: number[] = [];
  private readonly found = new Map<string, boolean>();

  constructor(private readonly parts: readonly string[]) {
    // `#knowledge-source-` cannot overlap itself (one `#`, at its start), so each occurrence is
    // found once and every character is passed over once (by `indexOf`, in V8's linear search for
    // a fixed needle) plus at most 32 looked at after it.
    const prefix = SHARED_HANDLE_PREFIX;
    let examined = 0;
    for (let partIndex = 0; partIndex < parts.length; partIndex++) {
      const part = parts[partIndex] as string;
      let from = 0;
      for (let at = part.indexOf(prefix); at !== -1; at = part.indexOf(prefix, from)) {
        const start = at + prefix.length;
        let end = start;
        while (end - start < ID_HEX_CHARS && isLowerHex(part.charCodeAt(end))) end++;
        examined += end - from;
        from = end;
        if (end - start !== ID_HEX_CHARS) continue;
        const id = part.slice(start, end);
        if (this.firstHandle.has(id)) continue;
        this.firstHandle.set(id, this.handleEnd.length);
        this.handlePart.push(partIndex);
        this.handleEnd.push(end);
      }
      examined += part.length - from;
    }
    searchWork.examined += examined;
  }

  hasHandle(id: string): boolean {
    return this.firstHandle.has(id);
  }

  hasExcerpt(id: string, excerpt: string): boolean {
    let found = this.found.get(excerpt);
    if (found === undefined) {
      found = this.nearHandle(id, excerpt) || this.anywhere(excerpt);
      this.found.set(excerpt, found);
    }
    return found;
  }

  private nearHandle(id: string, excerpt: string): boolean {
    const ordinal = this.firstHandle.get(id);
    if (ordinal === undefined) return false;
    const part = this.parts[this.handlePart[ordinal] as number] ?? "";
    const handleEnd = this.handleEnd[ordinal] as number;
    let at = handleEnd;
    const limit = Math.min(part.length, at + EXCERPT_WINDOW);
    let found = false;
    for (let line = 0; line < NEAR_LINES && !found; line++) {
      while (at < limit && part.charCodeAt(at) !== NEWLINE) at++;
      if (at >= limit) break;
      at++;
      found = startsAt(part, excerpt, at);
    }
    searchWork.examined += at - handleEnd;
    return found;
  }

  private anywhere(excerpt: string): boolean {
    const needle = new LinearNeedle(excerpt);
    return this.parts.some((part) => needle.indexIn(part) !== -1);
  }
}
