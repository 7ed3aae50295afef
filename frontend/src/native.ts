/**
 * DeerFlow's native RAGFlow snapshots (contracts/README.md "Native RAGFlow snapshots").
 *
 * `artifact.knowledge_sources = {version: 1, sources: [...]}` with opaque ids `<32 hex>-<n>` that
 * cannot be recomputed, so a reader checks each record's shape and bounds and that the message
 * still links to it (`](#knowledge-<id>)`). Only `knowledge_search` and `task` messages carry
 * native evidence. The twin of `backend/deerflow/knowledge/native.py`; the shared vectors in
 * `contracts/vectors/native_ragflow.json` pin both. Never throws.
 */

import { NATIVE_HANDLE_PREFIX, NATIVE_ID_SYNTAX, NATIVE_LINK_PATTERN } from "./handles.js";
import { KNOWLEDGE_SOURCES_KEY, isRecordObject } from "./contract.js";
import { textParts } from "./envelope.js";
import { codePointLength, hasLoneSurrogate } from "./text.js";

export const NATIVE_VERSION = 1;
export const NATIVE_PROVIDER = "ragflow";
export const NATIVE_TOOL_NAMES: ReadonlySet<string> = new Set(["knowledge_search", "task"]);
export const MAX_NATIVE_SOURCES = 100;
export const MAX_NATIVE_LOCATOR_CHARS = 256;
export const MAX_NATIVE_NAME_CHARS = 512;
export const MAX_NATIVE_TEXT_CHARS = 200_000;
export const MAX_NATIVE_PAGES = 100;
export const NATIVE_ID_PATTERN = new RegExp(`^${NATIVE_ID_SYNTAX}$`);

/** One native RAGFlow record (locators are artifact-only and never shown). */
export interface NativeSource {
  readonly id: string;
  readonly provider: "ragflow";
  readonly dataset_id: string;
  readonly document_id: string;
  readonly chunk_id: string;
  readonly dataset_name: string;
  readonly document_name: string;
  readonly text: string;
  readonly truncated: boolean;
  readonly pages: readonly number[];
}

export type NativeRejectionReason = "bad_field" | "duplicate" | "handle_missing";
/** Why a whole snapshot was rejected; `internal_error` is the reader's own fault. */
export type NativeErrorCode =
  | "tool_not_allowed"
  | "bad_version"
  | "not_an_array"
  | "too_many_records"
  | "internal_error";

export interface NativeRejection {
  readonly index: number;
  readonly reason: NativeRejectionReason;
}

export interface NativeReadResult {
  readonly sources: readonly NativeSource[];
  readonly rejected: readonly NativeRejection[];
  readonly error: NativeErrorCode | null;
}

const EMPTY: NativeReadResult = Object.freeze({
  sources: Object.freeze([]),
  rejected: Object.freeze([]),
  error: null,
});

function failed(error: NativeErrorCode): NativeReadResult {
  return Object.freeze({ sources: Object.freeze([]), rejected: Object.freeze([]), error });
}

const hasOwn = (value: object, key: string): boolean =>
  Object.prototype.hasOwnProperty.call(value, key);

const own = (value: Record<string, unknown>, key: string): unknown =>
  hasOwn(value, key) ? value[key] : undefined;

/** `#knowledge-<id>`: the destination a message links a native record with. */
export function nativeHandle(id: string): string {
  return NATIVE_HANDLE_PREFIX + id;
}

/** Verified native records of one tool message. Never throws. */
export function readNative(
  content: unknown,
  artifact: unknown,
  toolName: unknown,
): NativeReadResult {
  try {
    return read(content, artifact, toolName);
  } catch {
    // Defence in depth (throwing proxies and the like); mirrors the Python reader.
    return failed("internal_error");
  }
}

function read(content: unknown, artifact: unknown, toolName: unknown): NativeReadResult {
  if (!isRecordObject(artifact)) return EMPTY;
  const snapshot = own(artifact, KNOWLEDGE_SOURCES_KEY);
  if (!isRecordObject(snapshot)) return EMPTY;
  if (typeof toolName !== "string" || !NATIVE_TOOL_NAMES.has(toolName)) {
    return failed("tool_not_allowed");
  }
  if (own(snapshot, "version") !== NATIVE_VERSION) return failed("bad_version");
  const records = own(snapshot, "sources");
  if (!Array.isArray(records)) return failed("not_an_array");
  if (records.length > MAX_NATIVE_SOURCES) return failed("too_many_records");

  const linked = new Set<string>();
  for (const part of textParts(content)) {
    for (const match of part.matchAll(NATIVE_LINK_PATTERN)) {
      if (match[1] !== undefined) linked.add(match[1]);
    }
  }
  const accepted = new Map<string, NativeSource>();
  const rejected: NativeRejection[] = [];
  const length = records.length;
  for (let index = 0; index < length; index++) {
    let source: NativeSource | null;
    try {
      source = normalized(records[index]);
    } catch {
      source = null;
    }
    let reason: NativeRejectionReason | null = null;
    if (source === null) reason = "bad_field";
    else if (accepted.has(source.id)) reason = "duplicate";
    else if (!linked.has(source.id)) reason = "handle_missing";
    if (reason !== null) {
      rejected.push(Object.freeze({ index, reason }));
    } else if (source !== null) {
      accepted.set(source.id, source);
    }
  }
  return Object.freeze({
    sources: Object.freeze([...accepted.values()]),
    rejected: Object.freeze(rejected),
    error: null,
  });
}

function isString(value: unknown, minChars: number, maxChars: number): value is string {
  if (typeof value !== "string" || hasLoneSurrogate(value)) return false;
  // A string of more than 2·max UTF-16 units has more than max code points.
  if (value.length > 2 * maxChars) return false;
  const chars = codePointLength(value);
  return chars >= minChars && chars <= maxChars;
}

function isPage(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= 1_000_000;
}

/** A fresh frozen record when every native field rule holds, else null (unknown keys dropped). */
function normalized(record: unknown): NativeSource | null {
  if (!isRecordObject(record)) return null;
  const id = own(record, "id");
  if (typeof id !== "string" || !NATIVE_ID_PATTERN.test(id)) return null;
  if (own(record, "provider") !== NATIVE_PROVIDER) return null;
  const datasetId = own(record, "dataset_id");
  const documentId = own(record, "document_id");
  const chunkId = own(record, "chunk_id");
  for (const locator of [datasetId, documentId, chunkId]) {
    if (!isString(locator, 1, MAX_NATIVE_LOCATOR_CHARS)) return null;
  }
  const datasetName = own(record, "dataset_name");
  const documentName = own(record, "document_name");
  const text = own(record, "text");
  if (!isString(datasetName, 0, MAX_NATIVE_NAME_CHARS)) return null;
  if (!isString(documentName, 0, MAX_NATIVE_NAME_CHARS)) return null;
  if (!isString(text, 0, MAX_NATIVE_TEXT_CHARS)) return null;
  const truncated = own(record, "truncated");
  if (typeof truncated !== "boolean") return null;
  const rawPages = own(record, "pages");
  if (!Array.isArray(rawPages) || rawPages.length > MAX_NATIVE_PAGES) return null;
  const pages: number[] = [];
  for (const page of rawPages as unknown[]) {
    if (!isPage(page)) return null;
    pages.push(page);
  }
  return Object.freeze({
    id,
    provider: NATIVE_PROVIDER,
    dataset_id: datasetId as string,
    document_id: documentId as string,
    chunk_id: chunkId as string,
    dataset_name: datasetName,
    document_name: documentName,
    text,
    truncated,
    pages: Object.freeze(pages),
  });
}
