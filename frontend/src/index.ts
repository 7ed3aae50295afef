/**
 * @deerflow/knowledge-citations — the TypeScript side of the deerflow-knowledge contract
 * (contracts/README.md): source ids, the evidence envelope reader and the citation link grammar,
 * plus the citation scanner and the React renderer. Everything React-free is `./core.ts` (the
 * `/core` entry point), re-exported here whole.
 */

export * from "./core.js";
export {
  MAX_BRACKET_DEPTH,
  MAX_EMPHASIS_RUNS,
  MAX_INDENT_COLUMNS,
  MAX_INLINE_MARKERS,
  MAX_MARKDOWN_CHARS,
  MAX_NESTING_DEPTH,
  guardMarkdown,
} from "./guard.js";
export type { GuardOptions, GuardedMarkdown, MarkdownLimits } from "./guard.js";
export {
  MAX_PLAIN_RELABEL_PASSES,
  citationsByOffset,
  citationsInTree,
  findCitations,
  literalMarkersExtension,
  parseMarkdown,
  relabelOrphans,
  remarkCitations,
} from "./citations.js";
export type { Citation, TreeCitations } from "./citations.js";
export {
  collectSources,
  createSourceResolver,
  defaultSourceResolver,
  describeSource,
  isToolMessage,
} from "./resolve.js";
export { classifyLink, summarizeCitations } from "./summary.js";
export type { CitationSummary, LinkClass } from "./summary.js";
export type {
  InertReason,
  MessageEvidence,
  ResolverStats,
  SourceDisplay,
  SourceResolver,
  SourceResolverOptions,
} from "./resolve.js";
export {
  CitationChip,
  DEFAULT_LABELS,
  InertCitation,
  KNOWLEDGE_SANITIZE_SCHEMA,
  KnowledgeLink,
  KnowledgeMarkdown,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  MessageBoundary,
  SourceDetails,
  SourcesPanel,
  WebCitation,
  isKnowledgeHref,
  useCitationLookup,
  useKnowledgeSources,
} from "./components/index.js";
export type {
  CitationChipProps,
  CitationSourceProps,
  HistorySourceProps,
  InertCitationProps,
  KnowledgeHref,
  KnowledgeLabels,
  KnowledgeLinkFallbackProps,
  KnowledgeLinkProps,
  KnowledgeMarkdownProps,
  KnowledgeMessageProps,
  KnowledgeSourcesPanelProps,
  KnowledgeSourcesProps,
  KnowledgeSourcesValue,
  LookupSourceProps,
  MessageBoundaryProps,
  SavedEvidenceSourceProps,
  SourcesPanelProps,
  WebCitationProps,
} from "./components/index.js";
