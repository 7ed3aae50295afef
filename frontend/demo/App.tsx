/**
 * The bundled chat page: threads, a streamed conversation rendered with KnowledgeMarkdown, chip
 * previews and a sources panel per answer. Evidence comes only from the thread's own tool
 * messages, re-verified in the browser; a reload re-reads the thread and resolves the same chips.
 */

import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactElement } from "react";

import { KnowledgeMarkdown, SourcesPanel, defaultSourceResolver } from "../src/index.js";
import {
  createThread,
  getInfo,
  getState,
  listThreads,
  streamRun,
  type GatewayInfo,
  type ThreadSummary,
  type WireMessage,
} from "./api.js";

const SUGGESTIONS = [
  "How does a reader verify the evidence behind a citation?",
  "What is the trust boundary?",
  "How do I point the tool at my own LightRAG server?",
];

function threadFromUrl(): string | null {
  return new URLSearchParams(window.location.search).get("thread");
}

function setThreadInUrl(threadId: string | null): void {
  const url = new URL(window.location.href);
  if (threadId === null) url.searchParams.delete("thread");
  else url.searchParams.set("thread", threadId);
  window.history.replaceState(null, "", url);
}

function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part: unknown) => {
      if (typeof part === "string") return part;
      if (part !== null && typeof part === "object" && (part as { type?: unknown }).type === "text") {
        const text = (part as { text?: unknown }).text;
        return typeof text === "string" ? text : "";
      }
      return "";
    })
    .join("");
}

function ToolResult({ message }: { message: WireMessage }): ReactElement {
  const content = textOf(message.content);
  // The renderer's resolver: validated once per tool message, even across re-parsed frames.
  const verified = defaultSourceResolver.evidenceOf(message)?.sources.length ?? 0;
  const failed = content.startsWith("Error:");
  return (
    <details className={`demo-tool${failed ? " demo-tool--error" : ""}`}>
      <summary>
        {failed
          ? "The knowledge search failed"
          : `${message.name ?? "tool"} returned ${verified} verified source${verified === 1 ? "" : "s"}`}
      </summary>
      <pre className="demo-tool__text">{content}</pre>
    </details>
  );
}

export function App(): ReactElement {
  const [info, setInfo] = useState<GatewayInfo | null>(null);
  const [threads, setThreads] = useState<ThreadSummary[]>([]);
  const [threadId, setThreadId] = useState<string | null>(threadFromUrl);
  const [messages, setMessages] = useState<WireMessage[]>([]);
  const [draft, setDraft] = useState<WireMessage | null>(null);
  const [question, setQuestion] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const endRef = useRef<HTMLDivElement | null>(null);
  // The thread whose messages are already on screen: a thread created by `ask` is filled by its
  // own stream, and loading its (still empty) state in parallel could overwrite the answer.
  const shownThread = useRef<string | null>(null);

  const refreshThreads = useCallback(async () => {
    try {
      setThreads(await listThreads());
    } catch (exc) {
      setError(`Could not list threads: ${(exc as Error).message}`);
    }
  }, []);

  useEffect(() => {
    getInfo().then(setInfo, (exc: Error) => setError(`Gateway unreachable: ${exc.message}`));
    void refreshThreads();
  }, [refreshThreads]);

  useEffect(() => {
    setThreadInUrl(threadId);
    if (threadId !== null && threadId === shownThread.current) return;
    shownThread.current = threadId;
    setDraft(null);
    if (threadId === null) {
      setMessages([]);
      return;
    }
    let cancelled = false;
    getState(threadId).then(
      (state) => {
        if (!cancelled) setMessages(state.values.messages);
      },
      (exc: Error) => {
        if (!cancelled) {
          setError(`Could not load the thread: ${exc.message}`);
          setThreadId(null);
        }
      },
    );
    return () => {
      cancelled = true;
    };
  }, [threadId]);

  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: "end" });
  }, [messages, draft]);

  const shown = useMemo(() => {
    if (draft === null || messages.some((m) => m.id === draft.id)) return messages;
    return [...messages, draft];
  }, [messages, draft]);

  const ask = async (text: string): Promise<void> => {
    const trimmed = text.trim();
    if (!trimmed || busy) return;
    setBusy(true);
    setError(null);
    setQuestion("");
    try {
      let id = threadId;
      if (id === null) {
        id = (await createThread()).thread_id;
        shownThread.current = id;
        setThreadId(id);
      }
      setMessages((previous) => [...previous, { type: "human", id: `pending-${Date.now()}`, content: trimmed }]);
      for await (const event of streamRun(id, trimmed)) {
        if (event.event === "values") {
          setMessages(event.data.messages);
        } else if (event.event === "messages") {
          const [chunk] = event.data;
          if (chunk.type === "AIMessageChunk" && typeof chunk.content === "string" && chunk.content) {
            setDraft((current) =>
              current !== null && current.id === chunk.id
                ? { ...current, content: `${textOf(current.content)}${chunk.content as string}` }
                : { type: "ai", id: chunk.id ?? "draft", content: chunk.content },
            );
          }
        } else if (event.event === "error") {
          setError(event.data.message);
        }
      }
    } catch (exc) {
      setError(`The run failed: ${(exc as Error).message}`);
    } finally {
      setBusy(false);
      setDraft(null);
      void refreshThreads();
    }
  };

  const onSubmit = (event: FormEvent): void => {
    event.preventDefault();
    void ask(question);
  };

  return (
    <div className="demo">
      <aside className="demo-sidebar" aria-label="Conversations">
        <h1 className="demo-title">deerflow-knowledge</h1>
        <button type="button" className="demo-new" onClick={() => setThreadId(null)}>
          New conversation
        </button>
        <ul className="demo-threads">
          {threads.map((thread) => (
            <li key={thread.thread_id}>
              <button
                type="button"
                className={thread.thread_id === threadId ? "demo-thread demo-thread--active" : "demo-thread"}
                aria-current={thread.thread_id === threadId ? "true" : undefined}
                onClick={() => setThreadId(thread.thread_id)}
              >
                {thread.title}
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <main className="demo-main">
        <header className="demo-header">
          {info === null ? (
            <span>Connecting…</span>
          ) : (
            <span>
              Provider <strong>{info.provider}</strong> · answers by <strong>{info.model}</strong>
            </span>
          )}
        </header>
        <section className="demo-messages" aria-live="polite" aria-busy={busy}>
          {shown.length === 0 && (
            <div className="demo-empty">
              <p>Ask a question about the indexed documents. Every citation in an answer is checked against the evidence the search tool returned.</p>
              <div className="demo-suggestions">
                {SUGGESTIONS.map((s) => (
                  <button type="button" key={s} onClick={() => void ask(s)} disabled={busy}>
                    {s}
                  </button>
                ))}
              </div>
            </div>
          )}
          {shown.map((message, index) => {
            const key = message.id ?? `m${index}`;
            if (message.type === "human") {
              return (
                <div key={key} className="demo-msg demo-msg--human">
                  {textOf(message.content)}
                </div>
              );
            }
            if (message.type === "tool") return <ToolResult key={key} message={message} />;
            if (message.type !== "ai") return null;
            const markdown = textOf(message.content);
            if (!markdown && message.tool_calls && message.tool_calls.length > 0) {
              const query = message.tool_calls[0]?.args["query"];
              return (
                <div key={key} className="demo-step">
                  Searching the knowledge base{typeof query === "string" ? ` for “${query}”` : ""}…
                </div>
              );
            }
            const streaming = busy && index === shown.length - 1;
            return (
              <article key={key} className="demo-msg demo-msg--ai">
                <KnowledgeMarkdown markdown={markdown} messages={shown} messageIndex={index} streaming={streaming} />
                {!streaming && <SourcesPanel markdown={markdown} messages={shown} messageIndex={index} defaultOpen={false} />}
              </article>
            );
          })}
          {error !== null && (
            <div role="alert" className="demo-error">
              {error}
            </div>
          )}
          <div ref={endRef} />
        </section>
        <form className="demo-input" onSubmit={onSubmit}>
          <label htmlFor="demo-question" className="demo-visually-hidden">
            Your question
          </label>
          <textarea
            id="demo-question"
            value={question}
            rows={2}
            placeholder="Ask about the documents…"
            onChange={(e) => setQuestion(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                void ask(question);
              }
            }}
          />
          <button type="submit" disabled={busy || !question.trim()}>
            {busy ? "Answering…" : "Send"}
          </button>
        </form>
      </main>
    </div>
  );
}
