/**
 * The README's assistant-ui example, verbatim between the markers (test_assistant_ui.py checks
 * it): the text-part component and the runtime over the gateway that main.tsx renders.
 */
// --- README assistant-ui example: begin ---
import { getExternalStoreMessages, useAuiState, type TextMessagePartProps } from "@assistant-ui/react";
import {
  unstable_createLangGraphStream,
  useLangGraphRuntime,
  type LangChainMessage,
  type UseLangGraphRuntimeOptions,
} from "@assistant-ui/react-langgraph";
import { KnowledgeMarkdown, SourcesPanel } from "@deerflow/knowledge-citations";
import type { Client } from "@langchain/langgraph-sdk";
import { useMemo } from "react";

/** An assistant text part, verified against the LangChain messages behind the thread so far. */
export function KnowledgeText({ text, status }: TextMessagePartProps) {
  const id = useAuiState((s) => s.message.id);
  const thread = useAuiState((s) => s.thread.messages);
  const { history, index } = useMemo(() => {
    const history: LangChainMessage[] = [];
    let index = -1;
    for (const message of thread) {
      history.push(...getExternalStoreMessages<LangChainMessage>(message)); // tool messages too
      if (message.id === id) index = history.length - 1; // its evidence is before it
    }
    return { history, index };
  }, [thread, id]);
  if (index < 0) return <p>{text}</p>;
  const streaming = status.type === "running";
  return (
    <>
      <KnowledgeMarkdown markdown={text} messages={history} messageIndex={index} streaming={streaming} />
      {!streaming && <SourcesPanel markdown={text} messages={history} messageIndex={index} />}
    </>
  );
}

type Options = Omit<UseLangGraphRuntimeOptions, "stream" | "load">;

/** `client`: `new Client({ apiUrl: "http://127.0.0.1:8000/api" })`. */
export function useGatewayRuntime(client: Client, options: Options = {}) {
  const stream = useMemo(
    () => unstable_createLangGraphStream({ client, assistantId: "agent", streamMode: ["messages", "values"] }),
    [client],
  );
  return useLangGraphRuntime({
    ...options,
    stream,
    unstable_allowCancellation: true, // Cancel aborts the stream; the gateway cancels the run
    load: async (threadId) => {
      const state = await client.threads.getState<{ messages?: LangChainMessage[] }>(threadId);
      return { messages: state.values.messages ?? [] };
    },
  });
}
// --- README assistant-ui example: end ---
