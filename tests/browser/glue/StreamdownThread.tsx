/**
 * The README's streamdown example, verbatim between the markers (test_glue.py checks it): a
 * thread rendered with streamdown, knowledge links as chips, every other link the host's own.
 */
// --- README streamdown example: begin ---
import {
  KnowledgeLink,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  type KnowledgeLinkFallbackProps,
  type KnowledgeLinkProps,
} from "@deerflow/knowledge-citations";
import type { ReactNode } from "react";
import { Streamdown } from "streamdown";

type HostLink = (props: KnowledgeLinkFallbackProps) => ReactNode;

/** `messages`: the thread as useStream holds it (tool messages with their `artifact` included). */
export function StreamdownThread({ messages, HostLink }: { messages: readonly Record<string, unknown>[]; HostLink: HostLink }) {
  const components = { a: (props: KnowledgeLinkProps) => <KnowledgeLink {...props} fallback={HostLink} /> };
  return (
    <KnowledgeSources messages={messages}>
      {messages.map((message) =>
        message["type"] === "ai" && typeof message["content"] === "string" && message["content"] !== "" ? (
          <article key={String(message["id"])}>
            <KnowledgeMessage message={message}>
              <Streamdown components={components}>{message["content"]}</Streamdown>
              <KnowledgeSourcesPanel />
            </KnowledgeMessage>
          </article>
        ) : null,
      )}
    </KnowledgeSources>
  );
}
// --- README streamdown example: end ---
