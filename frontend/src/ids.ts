/**
 * Content-addressed source ids (contracts/README.md §2):
 *
 *   id = hex(SHA-256(UTF-8("deerflow.knowledge_source.v1\n") ‖ UTF-8(JCS(identity))))[0:32]
 *
 * Synchronous (JCS by `canonicalize`, SHA-256 by ./sha256.ts), so a renderer can verify evidence
 * during render without a Web Crypto round trip (and where Web Crypto is absent).
 */

import canonicalize from "canonicalize";

import { sha256Hex } from "./sha256.js";
import { hasLoneSurrogate } from "./text.js";

/** The domain tag hashed before the canonical identity. */
export const ID_DOMAIN_TAG = "deerflow.knowledge_source.v1\n";

/** The fields that make up a record's identity (every record field except `id`). */
export const IDENTITY_FIELDS = Object.freeze([
  "provider",
  "title",
  "excerpt",
  "dataset_name",
  "url",
  "page",
] as const);

/**
 * The RFC 8785 (JCS) text of a record's identity: each identity field that is present (an absent,
 * `undefined` or `null` field is omitted), never the `id` or any other key.
 *
 * @throws TypeError when a string field holds a lone surrogate (no UTF-8 form), or when the
 *   identity cannot be canonicalized (a non-finite number, a cycle).
 */
export function canonicalIdentity(record: object): string {
  const identity: Record<string, unknown> = {};
  for (const field of IDENTITY_FIELDS) {
    if (!Object.prototype.hasOwnProperty.call(record, field)) continue;
    const value: unknown = (record as Record<string, unknown>)[field];
    if (value === undefined || value === null) continue;
    if (typeof value === "string" && hasLoneSurrogate(value)) {
      throw new TypeError(`${field} contains a lone surrogate`);
    }
    identity[field] = value;
  }
  const text = canonicalize(identity);
  if (text === undefined) throw new TypeError("identity has no JSON form");
  return text;
}

/** The record's 32-hex id; an `id` key in `record` is ignored. */
export function sourceId(record: object): string {
  return sha256Hex(ID_DOMAIN_TAG + canonicalIdentity(record)).slice(0, 32);
}
