/**
 * The shared evidence contract: record types, bounds and field rules (contracts/README.md §1).
 *
 * Every rule is a plain function over `unknown`, so the envelope reader applies exactly the checks
 * the types promise. Lengths count code points (see `text.ts`).
 */

import {
  CONTROL_CLASS,
  WHITE_SPACE_CLASS,
  codePointLength,
  hasControl,
  hasLoneSurrogate,
  isBlank,
} from "./text.js";

/** One verified evidence record (the wire form: absent optional fields are omitted). */
export interface KnowledgeSource {
  readonly id: string;
  readonly provider: string;
  readonly title: string;
  readonly excerpt: string;
  readonly dataset_name?: string;
  readonly url?: string;
  readonly page?: number;
}

/** The record fields without `id`: what `sourceId` hashes. */
export type SourceIdentity = Omit<KnowledgeSource, "id">;

/** The artifact key a record was read from. */
export type SourceKey = "knowledge_sources" | "retrieval_sources";

/** Why one record was dropped (§3, first failing check wins, in this order). */
export type RejectionReason =
  | "bad_field"
  | "id_mismatch"
  | "duplicate"
  | "handle_missing"
  | "excerpt_missing";

/**
 * Why a whole envelope was rejected (§3). `internal_error` is the reader's own fault (only exotic
 * host objects such as throwing proxies reach it), kept apart so it is not blamed on the data.
 */
export type EnvelopeErrorCode = "not_an_array" | "bad_version" | "too_many_records" | "internal_error";

export interface Rejection {
  readonly key: SourceKey;
  readonly index: number;
  readonly reason: RejectionReason;
}

export interface ReadResult {
  readonly sources: readonly KnowledgeSource[];
  readonly rejected: readonly Rejection[];
  readonly error: EnvelopeErrorCode | null;
}

export const REJECTION_REASONS: readonly RejectionReason[] = Object.freeze([
  "bad_field",
  "id_mismatch",
  "duplicate",
  "handle_missing",
  "excerpt_missing",
]);

export const ENVELOPE_ERRORS: readonly EnvelopeErrorCode[] = Object.freeze([
  "not_an_array",
  "bad_version",
  "too_many_records",
  "internal_error",
]);

export const ENVELOPE_VERSION = 1;
export const MAX_SOURCES = 100;
export const ID_HEX_CHARS = 32;
export const MAX_PROVIDER_CHARS = 64;
export const MAX_TITLE_CHARS = 512;
export const MAX_EXCERPT_CHARS = 20_000;
export const MAX_DATASET_NAME_CHARS = 512;
export const MAX_URL_CHARS = 2_048;
export const MIN_PAGE = 1;
export const MAX_PAGE = 1_000_000;

export const KNOWLEDGE_SOURCES_KEY = "knowledge_sources";
export const VERSION_KEY = "knowledge_sources_version";
export const RETRIEVAL_SOURCES_KEY = "retrieval_sources";
/** The trust boundary: only an evidence authority may write these artifact keys. */
export const RESERVED_KEYS: readonly string[] = Object.freeze([
  KNOWLEDGE_SOURCES_KEY,
  VERSION_KEY,
  RETRIEVAL_SOURCES_KEY,
]);
export const REQUIRED_FIELDS = Object.freeze(["id", "provider", "title", "excerpt"] as const);
export const OPTIONAL_FIELDS = Object.freeze(["dataset_name", "url", "page"] as const);
export const RECORD_FIELDS: readonly string[] = Object.freeze([
  ...REQUIRED_FIELDS,
  ...OPTIONAL_FIELDS,
]);

export const ID_PATTERN = /^[0-9a-f]{32}$/;
export const PROVIDER_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
const URL_SPACE = WHITE_SPACE_CLASS + CONTROL_CLASS;
/** §1 URL grammar; `\s` there is white space plus control characters. Test the whole string. */
export const URL_PATTERN = new RegExp(
  `^https?://(?:[^${URL_SPACE}/?#@\\\\\\[\\]:]+|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?` +
    `(?:[/?#][^${URL_SPACE}\\\\]*)?$`,
  "u",
);

const hasOwn = (value: object, key: string): boolean =>
  Object.prototype.hasOwnProperty.call(value, key);

/** A JSON object: not null, not an array. */
export function isRecordObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function isText(value: unknown, maxChars: number, controlsAllowed: boolean): value is string {
  if (typeof value !== "string" || value.length === 0) return false;
  // Code points never outnumber UTF-16 units, and each is at most two: only a length between
  // max and 2·max needs counting.
  if (value.length > maxChars && (value.length > 2 * maxChars || codePointLength(value) > maxChars)) {
    return false;
  }
  return !isBlank(value) && !(controlsAllowed ? hasLoneSurrogate(value) : hasControlOrLoneSurrogate(value));
}

// `hasControl(s) || hasLoneSurrogate(s)` in one pass (with `u`, the surrogate range matches only
// unpaired halves).
const CONTROL_OR_LONE_SURROGATE_RE = new RegExp(`[${CONTROL_CLASS}\\ud800-\\udfff]`, "u");

function hasControlOrLoneSurrogate(value: string): boolean {
  return CONTROL_OR_LONE_SURROGATE_RE.test(value);
}

export function isValidId(value: unknown): value is string {
  return typeof value === "string" && ID_PATTERN.test(value);
}

export function isValidProvider(value: unknown): value is string {
  return typeof value === "string" && PROVIDER_PATTERN.test(value);
}

export function isValidTitle(value: unknown): value is string {
  return isText(value, MAX_TITLE_CHARS, false);
}

export function isValidExcerpt(value: unknown): value is string {
  return isText(value, MAX_EXCERPT_CHARS, true);
}

export function isValidDatasetName(value: unknown): value is string {
  return isText(value, MAX_DATASET_NAME_CHARS, false);
}

export function isValidUrl(value: unknown): value is string {
  return (
    typeof value === "string" &&
    (value.length <= MAX_URL_CHARS ||
      (value.length <= 2 * MAX_URL_CHARS && codePointLength(value) <= MAX_URL_CHARS)) &&
    !hasLoneSurrogate(value) &&
    URL_PATTERN.test(value)
  );
}

/** An integer 1–1,000,000; `true` is not an integer (and JSON's `1.0` is the number 1). */
export function isValidPage(value: unknown): value is number {
  return (
    typeof value === "number" && Number.isInteger(value) && value >= MIN_PAGE && value <= MAX_PAGE
  );
}

const FIELD_CHECKS: ReadonlyArray<readonly [string, (value: unknown) => boolean, boolean]> = [
  ["provider", isValidProvider, true],
  ["title", isValidTitle, true],
  ["excerpt", isValidExcerpt, true],
  ["dataset_name", isValidDatasetName, false],
  ["url", isValidUrl, false],
  ["page", isValidPage, false],
];

/**
 * True when `record` satisfies every field rule of §1: an object with exactly the known fields,
 * every required one present, every present one valid, and an id of 32 lowercase hex digits. The
 * id is not recomputed here (that is `id_mismatch`, checked by the reader with `sourceId`).
 */
export function validateRecordFields(record: unknown): record is KnowledgeSource {
  if (!isRecordObject(record)) return false;
  for (const key of Object.keys(record)) {
    if (!RECORD_FIELDS.includes(key)) return false;
  }
  if (!hasOwn(record, "id") || !isValidId(record["id"])) return false;
  for (const [field, check, required] of FIELD_CHECKS) {
    if (hasOwn(record, field)) {
      if (!check(record[field])) return false;
    } else if (required) {
      return false;
    }
  }
  return true;
}
