/**
 * The bundled chat page, built on LangChain's official client: `useStream` from
 * `@langchain/langgraph-sdk/react` against the gateway's LangGraph Platform API under `/api`
 * (history, reconnecting to a run still going after a reload or a reopened tab, the thread list
 * from `threads.search`). Every answer renders with `KnowledgeMarkdown`: evidence comes only from
 * the thread's own tool messages, re-verified in the browser, so a reload resolves the same chips.
 */

import { Client, type Message, type Thread } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import { useCallback, useEffect, useMemo, useRef, useState, type FormEvent, type ReactElement } from "react";

import { KnowledgeMarkdown, MessageBoundary, SourcesPanel, defaultSourceResolver, textParts } from "../src/index.js";

/** The gateway's LangGraph Platform API, next to the page. */
const API_URL = new URL("api", window.location.href).href;
/** The gateway's one assistant (its graph id). */
const ASSISTANT_ID = "agent";
const THREAD_LIST_LIMIT = 50;

const SUGGESTIONS = [
  "How does a reader verify the evidence behind a citation?",
  "What is the trust boundary?",
  "How do I point the tool at my own LightRAG server?",
];

interface GatewayInfo {
  readonly provider: string;
  readonly model: string;
}

type ChatState = { messages: Message[] };

function threadFromUrl(): string | null {
  return new URLSearchParams(window.location.search).get("thread");
}

function setThreadInUrl(threadId: string | null): void {
  const url = new URL(window.location.href);
  if (threadId === null) url.searchParams.delete("thread");
  else url.searchParams.set("thread", threadId);
  window.history.replaceState(null, "", url);
}

const textOf = (content: unknown): string => textParts(content).join("");

/** A thread's label in the list: its first question. */
function threadTitle(thread: Thread<ChatState>): string {
  const values = thread.values as Partial<ChatState> | null | undefined;
  const first = Array.isArray(values?.messages) ? values.messages.find((m) => m.type === "human") : undefined;
  const text = first === undefined ? "" : textOf(first.content).trim();
  return text === "" ? "New conversation" : text.length > 80 ? `${text.slice(0, 79)}…` : text;
}

function ToolResult({ message }: { message: Message }): ReactElement {
  const content = textOf(message.content);
  // The renderer's resolver: validated once per tool message, even across re-parsed frames.
  const verified = defaultSourceResolver.evidenceOf(message)?.sources.length ?? 0;
  const failed = content.startsWith("Error:");
  const name = message.type === "tool" ? message.name : undefined;
  return (
    <details className={`demo-tool${failed ? " demo-tool--error" : ""}`}>
      <summary>
        {failed
          ? "The knowledge search failed"
          : `${name ?? "tool"} returned ${verified} verified source${verified === 1 ? "" : "s"}`}
      </summary>
      <pre className="demo-tool__text">{content}</pre>
    </details>
  );
}

function Transcript({ messages, streaming }: { messages: Message[]; streaming: boolean }): ReactElement {
  return (
    <>
      {messages.map((message, index) => {
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
        const calls = message.tool_calls ?? [];
        if (markdown === "" && calls.length > 0) {
          const query: unknown = calls[0]?.args["query"];
          return (
            <div key={key} className="demo-step">
              Searching the knowledge base{typeof query === "string" ? ` for “${query}”` : ""}…
            </div>
          );
        }
        const live = streaming && index === messages.length - 1;
        return (
          <article key={key} className="demo-msg demo-msg--ai">
            <MessageBoundary text={markdown}>
              <KnowledgeMarkdown messages={messages} messageIndex={index} streaming={live} />
              {!live && <SourcesPanel messages={messages} messageIndex={index} defaultOpen={false} />}
            </MessageBoundary>
          </article>
        );
      })}
    </>
  );
}

export function App(): ReactElement {
  const client = useMemo(() => new Client({ apiUrl: API_URL }), []);
  const [info, setInfo] = useState<GatewayInfo | null>(null);
  const [threads, setThreads] = useState<Thread<ChatState>[]>([]);
  const [threadId, setThreadId] = useState<string | null>(threadFromUrl);
  const [question, setQuestion] = useState("");
  const [drawerOpen, setDrawerOpen] = useState(false);
  const [notice, setNotice] = useState<string | null>(null);
  const inputRef = useRef<HTMLTextAreaElement | null>(null);
  const endRef = useRef<HTMLDivElement | null>(null);

  const stream = useStream<ChatState>({
    client,
    assistantId: ASSISTANT_ID,
    threadId,
    onThreadId: setThreadId,
    fetchStateHistory: { limit: 1 },
    // localStorage, not the default sessionStorage: a run still going is rejoined in a new tab too.
    reconnectOnMount: () => window.localStorage,
  });
  const busy = stream.isLoading;
  const messages = stream.messages;

  const refreshThreads = useCallback(async () => {
    try {
      setThreads(
        await client.threads.search<ChatState>({
          limit: THREAD_LIST_LIMIT,
          sortBy: "updated_at",
          sortOrder: "desc",
        }),
      );
    } catch (exc) {
      setNotice(`Could not list conversations: ${(exc as Error).message}`);
    }
  }, [client]);

  useEffect(() => {
    fetch(`${API_URL}/info`)
      .then(async (response) => {
        if (!response.ok) throw new Error(`${response.status} ${response.statusText}`);
        setInfo((await response.json()) as GatewayInfo);
      })
      .catch((exc: Error) => setNotice(`Gateway unreachable: ${exc.message}`));
  }, []);

  // The thread list after every run and whenever the thread changes.
  useEffect(() => {
    if (!busy) void refreshThreads();
  }, [busy, threadId, refreshThreads]);

  useEffect(() => setThreadInUrl(threadId), [threadId]);

  useEffect(() => {
    endRef.current?.scrollIntoView?.({ block: "end" });
  }, [messages]);

  const openThread = (id: string | null): void => {
    setThreadId(id);
    setNotice(null);
    setDrawerOpen(false);
    inputRef.current?.focus();
  };

  const ask = (text: string): void => {
    const trimmed = text.trim();
    if (trimmed === "" || busy) return;
    setNotice(null);
    setQuestion("");
    const human: Message = { type: "human", content: trimmed };
    void stream.submit(
      { messages: [human] },
      {
        optimisticValues: (previous) => ({ ...previous, messages: [...(previous.messages ?? []), human] }),
        streamResumable: true,
        onDisconnect: "continue",
      },
    );
    inputRef.current?.focus();
  };

  const onSubmit = (event: FormEvent): void => {
    event.preventDefault();
    ask(question);
  };

  const error = stream.error === undefined || stream.error === null ? null : String((stream.error as Error).message ?? stream.error);

  return (
    <div className={drawerOpen ? "demo demo--drawer-open" : "demo"}>
      <aside id="demo-conversations" className="demo-sidebar" aria-label="Conversations">
        <h1 className="demo-title">deerflow-knowledge</h1>
        <button type="button" className="demo-new" onClick={() => openThread(null)}>
          New conversation
        </button>
        <ul className="demo-threads">
          {threads.map((thread) => (
            <li key={thread.thread_id}>
              <button
                type="button"
                className={thread.thread_id === threadId ? "demo-thread demo-thread--active" : "demo-thread"}
                aria-current={thread.thread_id === threadId ? "true" : undefined}
                onClick={() => openThread(thread.thread_id)}
              >
                {threadTitle(thread)}
              </button>
            </li>
          ))}
        </ul>
      </aside>
      <main className="demo-main">
        <header className="demo-header">
          <button
            type="button"
            className="demo-menu"
            aria-controls="demo-conversations"
            aria-expanded={drawerOpen}
            onClick={() => setDrawerOpen((open) => !open)}
          >
            Conversations
          </button>
          <span className="demo-status">
            {info === null ? (
              "Connecting…"
            ) : (
              <>
                Provider <strong>{info.provider}</strong> · answers by <strong>{info.model}</strong>
              </>
            )}
          </span>
          <button type="button" className="demo-menu" onClick={() => openThread(null)}>
            New
          </button>
        </header>
        <section className="demo-messages" aria-live="polite" aria-busy={busy}>
          {messages.length === 0 && !busy && (
            <div className="demo-empty">
              <p>
                Ask a question about the indexed documents. Every citation in an answer is checked against the
                evidence the search tool returned.
              </p>
              <div className="demo-suggestions">
                {SUGGESTIONS.map((s) => (
                  <button type="button" key={s} onClick={() => ask(s)} disabled={busy}>
                    {s}
                  </button>
                ))}
              </div>
            </div>
          )}
          <Transcript messages={messages} streaming={busy} />
          {(error ?? notice) !== null && (
            <div role="alert" className="demo-error">
              {error !== null ? `The run failed: ${error}` : notice}
            </div>
          )}
          <div ref={endRef} />
        </section>
        <form className="demo-input" onSubmit={onSubmit} data-dk-keep-clear="">
          <label htmlFor="demo-question" className="demo-visually-hidden">
            Your question
          </label>
          <textarea
            id="demo-question"
            ref={inputRef}
            value={question}
            rows={2}
            placeholder="Ask about the documents…"
            onChange={(e) => setQuestion(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                ask(question);
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
