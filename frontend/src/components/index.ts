/**
 * React components of @deerflow/knowledge-citations (import `knowledge.css` for their styles).
 */

export { KNOWLEDGE_SANITIZE_SCHEMA, KnowledgeMarkdown } from "./KnowledgeMarkdown.js";
export type { KnowledgeMarkdownProps } from "./KnowledgeMarkdown.js";
export { CitationChip, InertCitation, SourceDetails, WebCitation } from "./CitationChip.js";
export type { CitationChipProps, InertCitationProps, WebCitationProps } from "./CitationChip.js";
export { KnowledgeLink, isKnowledgeHref } from "./KnowledgeLink.js";
export type { KnowledgeHref, KnowledgeLinkFallbackProps, KnowledgeLinkProps } from "./KnowledgeLink.js";
export { KnowledgeMessage, KnowledgeSources, useKnowledgeSources } from "./KnowledgeSources.js";
export type { KnowledgeMessageProps, KnowledgeSourcesProps, KnowledgeSourcesValue } from "./KnowledgeSources.js";
export { MessageBoundary } from "./MessageBoundary.js";
export type { MessageBoundaryProps } from "./MessageBoundary.js";
export { KnowledgeSourcesPanel } from "./KnowledgeSourcesPanel.js";
export type { KnowledgeSourcesPanelProps } from "./KnowledgeSourcesPanel.js";
export { SourcesPanel } from "./SourcesPanel.js";
export type { SourcesPanelProps } from "./SourcesPanel.js";
export { DEFAULT_LABELS } from "./labels.js";
export type { KnowledgeLabels } from "./labels.js";
export { useCitationLookup } from "./useCitationLookup.js";
export type {
  CitationSourceProps,
  HistorySourceProps,
  LookupSourceProps,
  SavedEvidenceSourceProps,
} from "./useCitationLookup.js";
