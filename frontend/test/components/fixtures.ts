/** Builders for histories with valid (and deliberately forged) evidence. */

import { sourceId, type KnowledgeSource } from "../../src/index.js";

export interface RecordFields {
  readonly provider?: string;
  readonly title: string;
  readonly excerpt: string;
  readonly dataset_name?: string;
  readonly url?: string;
  readonly page?: number;
}

/** A record with its real id. */
export function sharedRecord(fields: RecordFields): KnowledgeSource {
  const identity = { provider: "local", ...fields };
  return { id: sourceId(identity), ...identity };
}

let counter = 0;

/** The content a formatter would write for `records`: a handle and the excerpt per record. */
export function contentFor(records: readonly KnowledgeSource[]): string {
  return records
    .map((record, i) => `[${i + 1}] [citation:${record.title}](#knowledge-source-${record.id})\n${record.excerpt}`)
    .join("\n\n");
}

/** A LangGraph SDK tool message carrying `records` in a valid shared envelope. */
export function toolMessage(
  records: readonly KnowledgeSource[],
  options: { name?: string; content?: unknown; artifact?: unknown } = {},
): Record<string, unknown> {
  counter += 1;
  return {
    type: "tool",
    id: `tool-${counter}`,
    tool_call_id: `call-${counter}`,
    name: options.name ?? "knowledge_search",
    content: options.content ?? contentFor(records),
    artifact: options.artifact ?? { knowledge_sources_version: 1, knowledge_sources: records },
  };
}

export interface NativeFields {
  readonly id: string;
  readonly dataset_name?: string;
  readonly document_name?: string;
  readonly text: string;
  readonly truncated?: boolean;
  readonly pages?: number[];
}

export function nativeRecord(fields: NativeFields): Record<string, unknown> {
  return {
    provider: "ragflow",
    dataset_id: "5b1e7c2a6f3d11f0b1a40242ac120006",
    document_id: "a6c3d2e06f3e11f0b1a40242ac120006",
    chunk_id: "9f2c41d07be3a5e1",
    dataset_name: "HR Policies",
    document_name: "Employee_Handbook_2026.pdf",
    truncated: false,
    pages: [],
    ...fields,
  };
}

/** A native RAGFlow snapshot message. */
export function nativeToolMessage(
  records: ReadonlyArray<Record<string, unknown>>,
  name = "knowledge_search",
): Record<string, unknown> {
  counter += 1;
  const content = records
    .map((r, i) => `[citation:${i + 1}](#knowledge-${String(r["id"])}) ${String(r["dataset_name"])} / ${String(r["document_name"])}\n${String(r["text"])}`)
    .join("\n\n");
  return {
    type: "tool",
    id: `tool-${counter}`,
    tool_call_id: `call-${counter}`,
    name,
    content,
    artifact: { knowledge_sources: { version: 1, sources: records } },
  };
}

export function ai(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  return { type: "ai", id: `ai-${counter}`, content, ...extra };
}

export function human(content: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  counter += 1;
  return { type: "human", id: `human-${counter}`, content, ...extra };
}

export const cite = (record: { id: string }, label = "Guide"): string =>
  `[citation:${label}](#knowledge-source-${record.id})`;
