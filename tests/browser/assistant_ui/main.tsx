/**
 * assistant-ui as a second client of the gateway: `@assistant-ui/react` primitives on
 * `@assistant-ui/react-langgraph`'s runtime, the thread list backed by the gateway's
 * `threads.search`, and every assistant text part rendered by `KnowledgeMarkdown` against the
 * LangChain messages the runtime holds (so tool evidence before the answer turns into chips).
 * The gateway's API URL comes from `?api=`; the open thread is kept in `?thread=`.
 */

import "@deerflow/knowledge-citations/knowledge.css";

import {
  AssistantRuntimeProvider,
  ComposerPrimitive,
  MessagePrimitive,
  ThreadListItemPrimitive,
  ThreadListPrimitive,
  ThreadPrimitive,
  type RemoteThreadListAdapter,
} from "@assistant-ui/react";
import { textParts } from "@deerflow/knowledge-citations";
import { Client, type Thread } from "@langchain/langgraph-sdk";
import { createAssistantStream } from "assistant-stream";
import { useState } from "react";
import { createRoot } from "react-dom/client";

import { KnowledgeText, useGatewayRuntime } from "./KnowledgeChat";

const params = new URLSearchParams(window.location.search);
const client = new Client({ apiUrl: params.get("api") ?? `${window.location.origin}/api` });
const TITLE_CHARS = 60;

function titleOf(thread: Thread): string | undefined {
  const saved = thread.metadata?.["title"];
  if (typeof saved === "string" && saved !== "") return saved;
  const values = thread.values as { messages?: readonly { type?: string; content?: unknown }[] } | null;
  const first = values?.messages?.find((message) => message.type === "human");
  const text = first === undefined ? "" : textParts(first.content).join(" ").trim();
  return text === "" ? undefined : text.slice(0, TITLE_CHARS);
}

function metadataOf(thread: Thread) {
  return { status: "regular" as const, remoteId: thread.thread_id, externalId: thread.thread_id, title: titleOf(thread) };
}

// The thread list is the gateway's own: threads.search, newest first; a title is the first
// question (kept in the thread's metadata once generated, so a rename survives a reload).
const threadList: RemoteThreadListAdapter = {
  async list() {
    const threads = await client.threads.search({ limit: 50, sortBy: "updated_at", sortOrder: "desc" });
    return { threads: threads.map(metadataOf) };
  },
  async initialize() {
    const thread = await client.threads.create();
    return { remoteId: thread.thread_id, externalId: thread.thread_id };
  },
  async fetch(threadId) {
    return metadataOf(await client.threads.get(threadId));
  },
  async rename(threadId, title) {
    await client.threads.update(threadId, { metadata: { title } });
  },
  async archive() {},
  async delete(threadId) {
    await client.threads.delete(threadId);
  },
  async generateTitle(threadId, messages) {
    const first = messages.find((message) => message.role === "user");
    const text = (first?.content ?? [])
      .map((part) => (part.type === "text" ? part.text : ""))
      .join(" ")
      .trim()
      .slice(0, TITLE_CHARS);
    if (text !== "") await client.threads.update(threadId, { metadata: { title: text } });
    return createAssistantStream((controller) => controller.appendText(text));
  },
};

function ThreadListItem() {
  return (
    <ThreadListItemPrimitive.Root className="thread">
      <ThreadListItemPrimitive.Trigger className="thread-trigger">
        <ThreadListItemPrimitive.Title fallback="New chat" />
      </ThreadListItemPrimitive.Trigger>
    </ThreadListItemPrimitive.Root>
  );
}

function App() {
  const [threadId, setThreadId] = useState(params.get("thread") ?? undefined);
  const runtime = useGatewayRuntime(client, {
    threadId,
    onThreadIdChange: (id) => {
      setThreadId(id);
      const url = new URL(window.location.href);
      if (id === undefined) url.searchParams.delete("thread");
      else url.searchParams.set("thread", id);
      window.history.replaceState(null, "", url);
    },
    unstable_threadListAdapter: threadList,
  });
  return (
    <AssistantRuntimeProvider runtime={runtime}>
      <nav aria-label="Threads">
        <ThreadListPrimitive.Root>
          <ThreadListPrimitive.New>New chat</ThreadListPrimitive.New>
          <ThreadListPrimitive.Items components={{ ThreadListItem }} />
        </ThreadListPrimitive.Root>
      </nav>
      <ThreadPrimitive.Root>
        <ThreadPrimitive.Viewport>
          <ThreadPrimitive.Messages>
            {({ message }) =>
              message.role === "user" ? (
                <MessagePrimitive.Root className="msg msg--user">
                  <MessagePrimitive.Parts />
                </MessagePrimitive.Root>
              ) : (
                <MessagePrimitive.Root className="msg msg--ai" data-status={message.status?.type}>
                  <MessagePrimitive.Parts components={{ Text: KnowledgeText }} />
                </MessagePrimitive.Root>
              )
            }
          </ThreadPrimitive.Messages>
        </ThreadPrimitive.Viewport>
        <ComposerPrimitive.Root>
          <ComposerPrimitive.Input aria-label="Your question" />
          <ThreadPrimitive.If running={false}>
            <ComposerPrimitive.Send>Send</ComposerPrimitive.Send>
          </ThreadPrimitive.If>
          <ThreadPrimitive.If running>
            <ComposerPrimitive.Cancel>Stop</ComposerPrimitive.Cancel>
          </ThreadPrimitive.If>
        </ComposerPrimitive.Root>
      </ThreadPrimitive.Root>
    </AssistantRuntimeProvider>
  );
}

createRoot(document.getElementById("root")!).render(<App />);
