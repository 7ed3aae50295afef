/**
 * The bundled chat page, built on LangChain's official client: `useStream` from
 * `@langchain/langgraph-sdk/react` against the gateway's LangGraph Platform API under `/api`
 * (history, reconnecting to a run still going after a reload or a reopened tab, the thread list
 * from `threads.search`). Every answer renders with `KnowledgeMarkdown`: evidence comes only from
 * the thread's own tool messages, re-verified in the browser, so a reload resolves the same chips.
 */

import { Client, type Message, type Thread } from "@langchain/langgraph-sdk";
import { useStream } from "@langchain/langgraph-sdk/react";
import {
  useCallback,
  useEffect,
  useLayoutEffect,
  useMemo,
  useRef,
  useState,
  type FormEvent,
  type ReactElement,
} from "react";

import { KnowledgeMarkdown, MessageBoundary, SourcesPanel, defaultSourceResolver, textParts } from "../src/index.js";

/** The gateway's LangGraph Platform API, next to the page. */
const API_URL = new URL("api", window.location.href).href;
/** The gateway's one assistant (its graph id). */
const ASSISTANT_ID = "agent";
const THREAD_LIST_LIMIT = 50;
/** Characters of a thread's first question shown in the list (the whole one is its tooltip). */
const THREAD_TITLE_CHARS = 80;
/** Characters of a search query echoed in the "Searching…" line. */
const QUERY_ECHO_CHARS = 160;
/** The tallest the question box grows to, as a share of the window's height. */
const INPUT_MAX_HEIGHT_SHARE = 0.35;
/** From this share of the question limit on, the page shows the count. */
const COUNT_SHOWN_FROM = 0.8;

const SUGGESTIONS = [
  "How does a reader verify the evidence behind a citation?",
  "What is the trust boundary?",
  "How do I connect to my own LightRAG server?",
];

interface GatewayInfo {
  readonly provider: string;
  readonly model: string;
  /** The longest question the gateway accepts, in code points (null: no limit of its own). */
  readonly max_question_chars?: number | null;
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

/** Code points, as the gateway counts them. */
const codePoints = (text: string): number => {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
};

/** `text` cut to `max` code points, with "…" when cut. */
function shorten(text: string, max: number): string {
  const points = Array.from(text);
  return points.length <= max ? text : `${points.slice(0, max - 1).join("")}…`;
}

const number = (value: number): string => value.toLocaleString("en-US");

/** A thread's first question ("" when it has none yet). */
function firstQuestion(thread: Thread<ChatState>): string {
  const values = thread.values as Partial<ChatState> | null | undefined;
  const first = Array.isArray(values?.messages) ? values.messages.find((m) => m.type === "human") : undefined;
  return first === undefined ? "" : textOf(first.content).trim();
}

/** What the gateway said, in words: the reason of its JSON error body, not the body itself. */
function errorReason(error: unknown): string {
  if (typeof error !== "object" || error === null) return String(error);
  const { status, text, message } = error as { status?: unknown; text?: unknown; message?: unknown };
  if (typeof status === "number" && typeof text === "string") {
    let reason = text.trim();
    try {
      const body: unknown = JSON.parse(text);
      if (typeof body === "object" && body !== null) {
        const { detail, error: said } = body as { detail?: unknown; error?: unknown };
        const found = typeof detail === "string" ? detail : typeof said === "string" ? said : null;
        if (found !== null) reason = found;
      }
    } catch {
      // Not JSON: the text as it is.
    }
    return reason === "" ? `the gateway answered ${status}` : `${reason} (${status})`;
  }
  return typeof message === "string" ? message : String(error);
}

/** True for the gateway's answer to a thread id it does not know (or cannot be a thread id). */
function isUnknownThread(error: unknown): boolean {
  const status = (error as { status?: unknown } | null)?.status;
  return status === 404 || status === 422;
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
      {/* It scrolls, so it is a tab stop (a keyboard can scroll it too). */}
      <pre className="demo-tool__text" tabIndex={0} aria-label="Tool output">
        {content}
      </pre>
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
          const echoed = typeof query === "string" ? ` for “${shorten(query, QUERY_ECHO_CHARS)}”` : "";
          // "…" only while this search is the run's last step; afterwards it is done.
          const searching = streaming && index === messages.length - 1;
          return (
            <div key={key} className="demo-step" title={typeof query === "string" ? query : undefined}>
              {searching ? `Searching the knowledge base${echoed}…` : `Searched the knowledge base${echoed}`}
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
  const menuRef = useRef<HTMLButtonElement | null>(null);
  const closeRef = useRef<HTMLButtonElement | null>(null);

  // A thread link the gateway does not know: say so and start afresh, rather than showing its
  // 404 as a failed run and sending every later question to the same missing thread.
  const onStreamError = useCallback((exc: unknown, run?: unknown) => {
    if (run === undefined && isUnknownThread(exc)) {
      setThreadId(null);
      setNotice("That conversation is not on this gateway (the link is wrong or it was deleted). Ask a question to start a new one.");
    }
  }, []);

  const stream = useStream<ChatState>({
    client,
    assistantId: ASSISTANT_ID,
    threadId,
    onThreadId: setThreadId,
    fetchStateHistory: { limit: 1 },
    // localStorage, not the default sessionStorage: a run still going is rejoined in a new tab too.
    reconnectOnMount: () => window.localStorage,
    onError: onStreamError,
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

  // The question box grows with its text, up to a share of the window.
  useLayoutEffect(() => {
    const box = inputRef.current;
    if (box === null) return;
    box.style.height = "auto";
    const max = Math.round(window.innerHeight * INPUT_MAX_HEIGHT_SHARE);
    box.style.height = `${Math.min(box.scrollHeight + (box.offsetHeight - box.clientHeight), max)}px`;
  }, [question]);

  // The drawer (narrow screens) closes with Escape, a tap outside or its close button, and gives
  // focus back to the button that opened it.
  const closeDrawer = useCallback((): void => {
    setDrawerOpen(false);
    menuRef.current?.focus();
  }, []);
  useEffect(() => {
    if (!drawerOpen) return;
    closeRef.current?.focus();
    const onKeyDown = (event: KeyboardEvent): void => {
      if (event.key === "Escape") closeDrawer();
    };
    document.addEventListener("keydown", onKeyDown);
    return () => document.removeEventListener("keydown", onKeyDown);
  }, [drawerOpen, closeDrawer]);

  const openThread = (id: string | null): void => {
    setThreadId(id);
    setNotice(null);
    setDrawerOpen(false);
    inputRef.current?.focus();
  };

  const limit = info?.max_question_chars ?? null;
  const length = codePoints(question.trim());
  const tooLong = limit !== null && length > limit;
  const countShown = limit !== null && length >= limit * COUNT_SHOWN_FROM;

  const ask = (text: string): void => {
    const trimmed = text.trim();
    if (trimmed === "" || busy) return;
    if (limit !== null && codePoints(trimmed) > limit) return;
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

  const failed = stream.error === undefined || stream.error === null ? null : stream.error;
  // An unknown thread is a notice (set by onStreamError), not a failed run: no run happened.
  const error = failed === null || isUnknownThread(failed) ? null : errorReason(failed);

  return (
    <div className={drawerOpen ? "demo demo--drawer-open" : "demo"}>
      {drawerOpen && <div className="demo-backdrop" aria-hidden="true" onClick={closeDrawer} />}
      <aside id="demo-conversations" className="demo-sidebar" aria-label="Conversations">
        <div className="demo-sidebar__head">
          <h1 className="demo-title">deerflow-knowledge</h1>
          <button type="button" ref={closeRef} className="demo-close" onClick={closeDrawer}>
            Close
          </button>
        </div>
        <button type="button" className="demo-new" onClick={() => openThread(null)}>
          New conversation
        </button>
        <ul className="demo-threads">
          {threads.map((thread) => {
            const asked = firstQuestion(thread);
            return (
              <li key={thread.thread_id}>
                <button
                  type="button"
                  className={thread.thread_id === threadId ? "demo-thread demo-thread--active" : "demo-thread"}
                  aria-current={thread.thread_id === threadId ? "true" : undefined}
                  data-thread-id={thread.thread_id}
                  // The list cuts long titles: the tooltip keeps the whole question.
                  title={asked === "" ? undefined : asked}
                  onClick={() => openThread(thread.thread_id)}
                >
                  {asked === "" ? "New conversation" : shorten(asked, THREAD_TITLE_CHARS)}
                </button>
              </li>
            );
          })}
        </ul>
      </aside>
      <main className="demo-main">
        <header className="demo-header">
          <button
            type="button"
            ref={menuRef}
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
              {error !== null ? `The run failed: ${error}.` : notice}
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
            aria-describedby={countShown ? "demo-question-count" : undefined}
            aria-invalid={tooLong || undefined}
            onChange={(e) => setQuestion(e.target.value)}
            onKeyDown={(e) => {
              if (e.key === "Enter" && !e.shiftKey) {
                e.preventDefault();
                ask(question);
              }
            }}
          />
          <button type="submit" disabled={busy || !question.trim() || tooLong}>
            {busy ? "Answering…" : "Send"}
          </button>
          {countShown && limit !== null && (
            <p id="demo-question-count" className={tooLong ? "demo-count demo-count--over" : "demo-count"} aria-live="polite">
              {tooLong
                ? `${number(length)} characters: a question can have at most ${number(limit)} here (it is the search query). Shorten it to send.`
                : `${number(length)} of ${number(limit)} characters`}
            </p>
          )}
        </form>
      </main>
    </div>
  );
}
