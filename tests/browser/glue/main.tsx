/**
 * The renderer-agnostic glue under three real Markdown renderers, in one StrictMode page: the same
 * LangChain thread (thread.ts) drawn by react-markdown, by streamdown 2.5 (DeerFlow's renderer;
 * once with its defaults, once configured as DeerFlow streams: remark-gfm, no sanitizer, word
 * animation, incomplete-Markdown repair, the answer growing chunk by chunk on `dkGlue.step()`) and
 * by assistant-ui's MarkdownTextPrimitive over an external-store runtime of the same messages.
 * Each host keeps its own links: `HostLink` stands for DeerFlow's `a` override (web citations
 * become its badge). tests/browser/test_glue.py drives it in Chromium.
 */

import "@deerflow/knowledge-citations/knowledge.css";

import {
  AssistantRuntimeProvider,
  MessagePrimitive,
  ThreadPrimitive,
  getExternalStoreMessages,
  useAuiState,
  useExternalMessageConverter,
  useExternalStoreRuntime,
} from "@assistant-ui/react";
import { convertLangChainMessages, type LangChainMessage } from "@assistant-ui/react-langgraph";
import { MarkdownTextPrimitive } from "@assistant-ui/react-markdown";
import {
  KnowledgeLink,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  type KnowledgeLinkFallbackProps,
  type KnowledgeLinkProps,
} from "@deerflow/knowledge-citations";
import { StrictMode, useMemo, useState, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import Markdown from "react-markdown";
import remarkGfm from "remark-gfm";
import { Streamdown } from "streamdown";

import { StreamdownThread } from "./StreamdownThread";
import { ANSWER, THREAD, chunks } from "./thread";

/** The host's own link rendering: `citation:` links become its web badge, others its link. */
function HostLink({ href, children, node: _node, ...rest }: KnowledgeLinkFallbackProps): ReactNode {
  const text = typeof children === "string" ? children : null;
  if (text?.startsWith("citation:")) {
    return (
      <a className="host-badge" href={href} target="_blank" rel="noreferrer">
        {text.slice("citation:".length)}
      </a>
    );
  }
  return (
    <a {...rest} className="host-link" href={href}>
      {children}
    </a>
  );
}

const Link = (props: KnowledgeLinkProps) => <KnowledgeLink {...props} fallback={HostLink} />;
const COMPONENTS = { a: Link };
const ANSWER_MESSAGE = THREAD[THREAD.length - 1]!;

function ReactMarkdownHost() {
  return (
    <KnowledgeSources messages={THREAD}>
      <KnowledgeMessage message={ANSWER_MESSAGE}>
        <Markdown components={COMPONENTS}>{ANSWER}</Markdown>
        <KnowledgeSourcesPanel />
      </KnowledgeMessage>
    </KnowledgeSources>
  );
}

function StreamdownHost() {
  return <StreamdownThread messages={THREAD} HostLink={HostLink} />;
}

const DEERFLOW_REMARK = [remarkGfm];
const DEERFLOW_REHYPE: never[] = [];
const WORD_ANIMATION = { animation: "fadeIn", duration: 200, sep: "word", stagger: 0 } as const;
const STEPS = chunks(ANSWER);

/** DeerFlow's configuration while a run streams; `dkGlue.step()` appends the next chunk. */
function StreamingStreamdownHost() {
  const [step, setStep] = useState(0);
  const done = step >= STEPS.length - 1;
  (window as unknown as { dkGlue: object }).dkGlue = {
    step: () => setStep((value) => Math.min(value + 1, STEPS.length - 1)),
    steps: STEPS.length,
  };
  const text = STEPS[step]!;
  // useStream's messages: the same earlier objects, a new object for the growing answer.
  const messages = useMemo(() => [...THREAD.slice(0, -1), { ...ANSWER_MESSAGE, content: text }], [text]);
  return (
    <KnowledgeSources messages={messages}>
      <KnowledgeMessage message={messages[messages.length - 1]}>
        <Streamdown
          components={COMPONENTS}
          remarkPlugins={DEERFLOW_REMARK}
          rehypePlugins={DEERFLOW_REHYPE}
          parseIncompleteMarkdown={!done}
          animated={WORD_ANIMATION}
          isAnimating={!done}
        >
          {text}
        </Streamdown>
        <KnowledgeSourcesPanel />
      </KnowledgeMessage>
      <output data-step={step} data-done={String(done)} />
    </KnowledgeSources>
  );
}

/** An assistant-ui text part: its LangChain message is the last AI message behind it. */
function AssistantUiText() {
  const id = useAuiState((s) => s.message.id);
  const thread = useAuiState((s) => s.thread.messages);
  const original = useMemo(() => {
    const message = thread.find((m) => m.id === id);
    const originals = message === undefined ? [] : getExternalStoreMessages<LangChainMessage>(message);
    return originals.findLast((m) => m.type === "ai");
  }, [thread, id]);
  return (
    <KnowledgeMessage message={original}>
      <MarkdownTextPrimitive components={COMPONENTS} smooth={false} />
      <KnowledgeSourcesPanel />
    </KnowledgeMessage>
  );
}

function AssistantUiHost() {
  const messages = THREAD as unknown as LangChainMessage[];
  const converted = useExternalMessageConverter({ callback: convertLangChainMessages, messages, isRunning: false });
  const runtime = useExternalStoreRuntime({ messages: converted, isRunning: false, onNew: async () => {} });
  return (
    <KnowledgeSources messages={THREAD}>
      <AssistantRuntimeProvider runtime={runtime}>
        <ThreadPrimitive.Root>
          <ThreadPrimitive.Messages>
            {({ message }) =>
              message.role === "assistant" ? (
                <MessagePrimitive.Root className="aui-assistant">
                  <MessagePrimitive.Parts components={{ Text: AssistantUiText }} />
                </MessagePrimitive.Root>
              ) : null
            }
          </ThreadPrimitive.Messages>
        </ThreadPrimitive.Root>
      </AssistantRuntimeProvider>
    </KnowledgeSources>
  );
}

function App() {
  return (
    <main>
      <section data-renderer="react-markdown"><ReactMarkdownHost /></section>
      <section data-renderer="streamdown"><StreamdownHost /></section>
      <section data-renderer="assistant-ui"><AssistantUiHost /></section>
      <section data-renderer="streamdown-streaming"><StreamingStreamdownHost /></section>
    </main>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
