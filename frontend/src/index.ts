/**
 * @deerflow/knowledge-citations — the TypeScript side of the deerflow-knowledge contract
 * (contracts/README.md): source ids, the evidence envelope reader and the citation link grammar.
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
  SOURCE_HANDLE_PREFIX,
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
export { handleFor, readEnvelope, textParts } from "./envelope.js";
export {
  CITATION_LABEL_PREFIX,
  CLOBBER_PREFIX,
  MAX_BRACKET_DEPTH,
  MAX_INLINE_MARKERS,
  MAX_MARKDOWN_CHARS,
  MAX_PLAIN_RELABEL_PASSES,
  NATIVE_ID_SYNTAX,
  SHARED_HANDLE_PREFIX,
  SHARED_ID_SYNTAX,
  citationsInTree,
  classifyDestination,
  findCitations,
  literalMarkersExtension,
  citationsByOffset,
  parseMarkdown,
  relabelOrphans,
  remarkCitations,
} from "./citations.js";
export type {
  Citation,
  CitationKind,
  CitationReason,
  DestinationClass,
  MarkdownLimits,
  TreeCitations,
} from "./citations.js";
export {
  CONTROL,
  WHITE_SPACE,
  codePointLength,
  codePointSlice,
  codePointToUtf16Index,
  hasControl,
  hasLoneSurrogate,
  isBlank,
  utf16ToCodePointIndex,
} from "./text.js";
export {
  classifyLink,
  collectSources,
  createSourceResolver,
  defaultSourceResolver,
  describeSource,
  isToolMessage,
  sourceLookupFrom,
  summarizeCitations,
} from "./resolve.js";
export type {
  CitationSummary,
  InertReason,
  LinkClass,
  MessageEvidence,
  ResolvedNativeSource,
  ResolvedSharedSource,
  ResolvedSource,
  ResolverStats,
  SourceDisplay,
  SourceLookup,
  SourceResolver,
  SourceResolverOptions,
} from "./resolve.js";
export { EXTERNAL_LINK_REL, classifyHref, isSafeHref, safeExternalUrl } from "./url.js";
export { INVISIBLE_FORMAT_RANGES, visibleText } from "./visible.js";
export type { HrefKind, SafeHref } from "./url.js";
export {
  CitationChip,
  DEFAULT_LABELS,
  InertCitation,
  KNOWLEDGE_SANITIZE_SCHEMA,
  KnowledgeMarkdown,
  MAX_EMPHASIS_RUNS,
  MAX_INDENT_COLUMNS,
  MAX_NESTING_DEPTH,
  MessageBoundary,
  SourceDetails,
  SourcesPanel,
  WebCitation,
  guardMarkdown,
  useCitationLookup,
} from "./components/index.js";
export type {
  CitationChipProps,
  CitationSourceProps,
  GuardOptions,
  GuardedMarkdown,
  HistorySourceProps,
  InertCitationProps,
  KnowledgeLabels,
  KnowledgeMarkdownProps,
  LookupSourceProps,
  MessageBoundaryProps,
  SavedEvidenceSourceProps,
  SourcesPanelProps,
  WebCitationProps,
} from "./components/index.js";
export {
  MAX_NATIVE_LOCATOR_CHARS,
  MAX_NATIVE_NAME_CHARS,
  MAX_NATIVE_PAGES,
  MAX_NATIVE_SOURCES,
  MAX_NATIVE_TEXT_CHARS,
  NATIVE_HANDLE_PREFIX,
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
