/**
 * `@deerflow/knowledge-citations/core`: the contract without the renderer.
 *
 * Source ids, the field rules, the handle grammar and the evidence readers (shared envelope,
 * native RAGFlow snapshot, saved batch evidence), for a server, a worker or any code that checks
 * evidence but draws nothing. Nothing here imports React, unified, remark, rehype or the Markdown
 * parser (a test walks the import graph); the main entry point exports all of this too.
 */

export {
  ENVELOPE_ERRORS,
  ENVELOPE_VERSION,
  ID_HEX_CHARS,
  ID_PATTERN,
  KNOWLEDGE_SOURCES_KEY,
  MAX_DATASET_NAME_CHARS,
  MAX_EXCERPT_CHARS,
  MAX_PAGE,
  MAX_PROVIDER_CHARS,
  MAX_SOURCES,
  MAX_TITLE_CHARS,
  MAX_URL_CHARS,
  MIN_PAGE,
  OPTIONAL_FIELDS,
  PROVIDER_PATTERN,
  RECORD_FIELDS,
  REJECTION_REASONS,
  REQUIRED_FIELDS,
  RESERVED_KEYS,
  RETRIEVAL_SOURCES_KEY,
  URL_PATTERN,
  VERSION_KEY,
  isValidDatasetName,
  isValidExcerpt,
  isValidId,
  isValidPage,
  isValidProvider,
  isValidTitle,
  isValidUrl,
  validateRecordFields,
} from "./contract.js";
export type {
  EnvelopeErrorCode,
  KnowledgeSource,
  ReadResult,
  Rejection,
  RejectionReason,
  SourceIdentity,
  SourceKey,
} from "./contract.js";
export { ID_DOMAIN_TAG, IDENTITY_FIELDS, canonicalIdentity, sourceId } from "./ids.js";
export {
  CITATION_LABEL_PREFIX,
  NATIVE_HANDLE_PREFIX,
  NATIVE_ID_SYNTAX,
  SHARED_HANDLE_PREFIX,
  SHARED_ID_SYNTAX,
  USER_CONTENT_PREFIX,
  classifyDestination,
} from "./handles.js";
export type { CitationKind, CitationReason, DestinationClass } from "./handles.js";
export { handleFor, readEnvelope, textParts } from "./envelope.js";
export {
  MAX_NATIVE_LOCATOR_CHARS,
  MAX_NATIVE_NAME_CHARS,
  MAX_NATIVE_PAGES,
  MAX_NATIVE_SOURCES,
  MAX_NATIVE_TEXT_CHARS,
  NATIVE_ID_PATTERN,
  NATIVE_PROVIDER,
  NATIVE_TOOL_NAMES,
  NATIVE_VERSION,
  nativeHandle,
  readNative,
} from "./native.js";
export type {
  NativeErrorCode,
  NativeReadResult,
  NativeRejection,
  NativeRejectionReason,
  NativeSource,
} from "./native.js";
export {
  MAX_SAVED_PAYLOAD_CHARS,
  MAX_SAVED_SOURCES,
  readSavedEvidence,
  savedEvidenceLookup,
} from "./savedEvidence.js";
export type { SavedEvidence, SavedEvidenceErrorCode, SavedEvidenceResult } from "./savedEvidence.js";
export { sourceLookupFrom } from "./lookup.js";
export type { ResolvedNativeSource, ResolvedSharedSource, ResolvedSource, SourceLookup } from "./lookup.js";
export {
  CONTROL_CHARACTERS,
  WHITE_SPACE,
  codePointLength,
  codePointSlice,
  codePointToUtf16Index,
  hasControl,
  hasLoneSurrogate,
  isBlank,
  utf16ToCodePointIndex,
} from "./text.js";
export { EXTERNAL_LINK_REL, classifyHref, isSafeHref, safeExternalUrl } from "./url.js";
export type { HrefKind, SafeHref } from "./url.js";
export { INVISIBLE_FORMAT_RANGES, visibleText } from "./visible.js";
