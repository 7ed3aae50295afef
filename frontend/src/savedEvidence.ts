/**
 * DeerFlow's saved batch evidence, read back with DeerFlow's own rules (deerflow.md §5.3).
 *
 * A durable batch task stores its report beside `{"knowledge_sources": {"version": 1, "sources":
 * [...], "omitted_count": n}}`; that payload is the only evidence a saved report may resolve
 * against — never a conversation's sources. Version 1, an integer `omitted_count`, at most 100
 * native records each cited in the stored report, non-blank names and text, text at most 200,000
 * and pages at most 100, the whole payload at most 1,000,000 code points of compact JSON; one
 * broken rule rejects the whole evidence (never partially rewritten). The twin of
 * `backend/deerflow/knowledge/saved_evidence.py`; `contracts/vectors/saved_evidence.json` pins
 * both. Never throws.
 */

import { KNOWLEDGE_SOURCES_KEY, isRecordObject } from "./contract.js";
import {
  MAX_NATIVE_SOURCES,
  readNative,
  type NativeErrorCode,
  type NativeRejectionReason,
  type NativeSource,
} from "./native.js";
import { sourceLookupFrom, type SourceLookup } from "./lookup.js";
import { codePointLength } from "./text.js";

export const MAX_SAVED_SOURCES = MAX_NATIVE_SOURCES;
/** Code points of the payload's compact JSON. */
export const MAX_SAVED_PAYLOAD_CHARS = 1_000_000;

export type SavedEvidenceErrorCode =
  | "not_an_object"
  | "too_large"
  | "bad_version"
  | "bad_omitted_count"
  | "not_an_array"
  | "too_many_records"
  | "bad_field"
  | "duplicate"
  | "not_cited"
  | "blank_field"
  | "internal_error";

export interface SavedEvidence {
  readonly sources: readonly NativeSource[];
  readonly omittedCount: number;
}

export interface SavedEvidenceResult {
  /** Null when there is no evidence or it was rejected whole. */
  readonly evidence: SavedEvidence | null;
  readonly error: SavedEvidenceErrorCode | null;
  /** The first offending record, for record-level errors. */
  readonly index: number | null;
}

const TO_SAVED: Readonly<Record<NativeErrorCode | NativeRejectionReason, SavedEvidenceErrorCode>> = {
  bad_field: "bad_field",
  duplicate: "duplicate",
  handle_missing: "not_cited",
  bad_version: "bad_version",
  not_an_array: "not_an_array",
  too_many_records: "too_many_records",
  internal_error: "internal_error",
  tool_not_allowed: "not_an_object", // unreachable: the reader is asked as a `task` message
};

function rejected(error: SavedEvidenceErrorCode, index: number | null = null): SavedEvidenceResult {
  return Object.freeze({ evidence: null, error, index });
}

/** Code points of `JSON.stringify(value)`, or null when it cannot be serialized. */
function compactSize(value: unknown): number | null {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    return null;
  }
  if (json === undefined) return null;
  return codePointLength(json);
}

/** The verified evidence of a saved report, or why it was rejected whole. Never throws. */
export function readSavedEvidence(report: unknown, payload: unknown): SavedEvidenceResult {
  try {
    return read(report, payload);
  } catch {
    return rejected("internal_error");
  }
}

function read(report: unknown, payload: unknown): SavedEvidenceResult {
  if (payload === null || payload === undefined) {
    return Object.freeze({ evidence: null, error: null, index: null });
  }
  const snapshot =
    isRecordObject(payload) && Object.prototype.hasOwnProperty.call(payload, KNOWLEDGE_SOURCES_KEY)
      ? payload[KNOWLEDGE_SOURCES_KEY]
      : undefined;
  if (!isRecordObject(snapshot) || Array.isArray(payload)) return rejected("not_an_object");
  const size = compactSize(payload);
  if (size === null) return rejected("not_an_object");
  if (size > MAX_SAVED_PAYLOAD_CHARS) return rejected("too_large");
  if (snapshot["version"] !== 1) return rejected("bad_version");
  const omitted = snapshot["omitted_count"];
  if (typeof omitted !== "number" || !Number.isInteger(omitted) || omitted < 0) {
    return rejected("bad_omitted_count");
  }
  const text = typeof report === "string" ? report : "";
  const result = readNative(text, { [KNOWLEDGE_SOURCES_KEY]: snapshot }, "task");
  if (result.error !== null) return rejected(TO_SAVED[result.error]);
  const first = result.rejected[0];
  if (first !== undefined) return rejected(TO_SAVED[first.reason], first.index);
  const blank = result.sources.findIndex((source) =>
    [source.dataset_name, source.document_name, source.text].some((value) => value.trim() === ""),
  );
  if (blank !== -1) return rejected("blank_field", blank);
  return Object.freeze({
    evidence: Object.freeze({ sources: result.sources, omittedCount: omitted }),
    error: null,
    index: null,
  });
}

/** A lookup over a saved report's own evidence only (empty when it was rejected). */
export function savedEvidenceLookup(report: unknown, payload: unknown): SourceLookup {
  const evidence = readSavedEvidence(report, payload).evidence;
  const sources = evidence?.sources ?? [];
  return sourceLookupFrom(sources.map((record) => ({ kind: "native" as const, id: record.id, record })));
}
