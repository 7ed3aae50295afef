/**
 * The evidence of a loaded thread, for any Markdown renderer: `KnowledgeSources` holds the
 * thread's messages, `KnowledgeMessage` scopes one rendered message (its evidence is the tool
 * messages before it, and it owns the message's citation registry), and the pieces inside —
 * `KnowledgeLink` for the renderer's `a`, `KnowledgeSourcesPanel` — read that scope. The host's
 * renderer parses the message; nothing here parses it again.
 */

import {
  createContext,
  useContext,
  useId,
  useMemo,
  useRef,
  useSyncExternalStore,
  type ReactElement,
  type ReactNode,
} from "react";

import { isRecordObject } from "../contract.js";
import { EMPTY_LOOKUP, type SourceLookup } from "../lookup.js";
import { defaultSourceResolver, type SourceResolver } from "../resolve.js";
import { CitationRegistry } from "./citationRegistry.js";
import { mergeLabels, type KnowledgeLabels } from "./labels.js";
import { useRememberedLookup } from "./rememberedLookup.js";

export interface KnowledgeSourcesProps {
  /**
   * The loaded thread as the host holds it: LangGraph / LangChain SDK messages (tool messages with
   * their `artifact`) or any JSON-like shape. Treat as immutable; pass the same objects on every
   * render (a streamed token may bring a new array of mostly the same objects).
   */
  readonly messages: readonly unknown[];
  readonly children?: ReactNode;
  /** Translated strings, merged over the English defaults. Pass a stable object. */
  readonly labels?: Partial<KnowledgeLabels> | undefined;
  /** The resolver whose caches to use (default: the shared `defaultSourceResolver`). */
  readonly resolver?: SourceResolver | undefined;
}

/** What {@link useKnowledgeSources} gives: the thread and the evidence before any message of it. */
export interface KnowledgeSourcesValue {
  readonly messages: readonly unknown[];
  readonly labels: KnowledgeLabels;
  readonly resolver: SourceResolver;
  /** The position of `message` (the object, or its `id`) in `messages`; -1 when absent. */
  indexOf(message: unknown): number;
  /** The verified evidence `message` may cite (tool messages before it); none when absent. */
  sourcesFor(message: unknown): SourceLookup;
}

interface Positions {
  readonly byObject: Map<unknown, number>;
  readonly byId: Map<string, number>;
}

// One position index per messages array, built the first time a message of it is looked up.
const positionsOf = new WeakMap<readonly unknown[], Positions>();

function idOf(message: unknown): string | undefined {
  if (typeof message === "string") return message;
  if (!isRecordObject(message)) return undefined;
  try {
    const id = message["id"];
    return typeof id === "string" && id !== "" ? id : undefined;
  } catch {
    return undefined;
  }
}

function positionIn(messages: readonly unknown[], message: unknown): number {
  if (!Array.isArray(messages)) return -1;
  let positions = positionsOf.get(messages);
  if (positions === undefined) {
    positions = { byObject: new Map(), byId: new Map() };
    for (let i = 0; i < messages.length; i++) {
      const item: unknown = messages[i];
      if (typeof item === "object" && item !== null && !positions.byObject.has(item)) positions.byObject.set(item, i);
      const id = idOf(item);
      if (id !== undefined && !positions.byId.has(id)) positions.byId.set(id, i);
    }
    positionsOf.set(messages, positions);
  }
  const direct = positions.byObject.get(message);
  if (direct !== undefined) return direct;
  const id = idOf(message);
  return id === undefined ? -1 : (positions.byId.get(id) ?? -1);
}

function sourcesValue(messages: readonly unknown[], labels: KnowledgeLabels, resolver: SourceResolver): KnowledgeSourcesValue {
  const indexOf = (message: unknown): number => positionIn(messages, message);
  return {
    messages,
    labels,
    resolver,
    indexOf,
    sourcesFor: (message) => {
      const index = indexOf(message);
      return index < 0 ? EMPTY_LOOKUP : resolver.collectSources(messages, index);
    },
  };
}

const NO_MESSAGES: readonly unknown[] = Object.freeze([]);
const NO_SOURCES = sourcesValue(NO_MESSAGES, mergeLabels(undefined), defaultSourceResolver);
const SourcesContext = createContext<KnowledgeSourcesValue>(NO_SOURCES);

/**
 * Makes the loaded thread's evidence available to the `KnowledgeMessage`s inside. Each tool
 * message object is verified once (the resolver's `WeakMap` cache), whichever message asks.
 */
export function KnowledgeSources({ messages, children, labels, resolver }: KnowledgeSourcesProps): ReactElement {
  const merged = useMemo(() => mergeLabels(labels), [labels]);
  const value = useMemo(
    () => sourcesValue(messages, merged, resolver ?? defaultSourceResolver),
    [messages, merged, resolver],
  );
  return <SourcesContext.Provider value={value}>{children}</SourcesContext.Provider>;
}

/** The enclosing {@link KnowledgeSources} (an empty thread outside one). */
export function useKnowledgeSources(): KnowledgeSourcesValue {
  return useContext(SourcesContext);
}

/** What the pieces inside one `KnowledgeMessage` read. */
export interface MessageScope {
  readonly registry: CitationRegistry;
  readonly labels: KnowledgeLabels;
  /** The evidence the message may cite (also `registry.sources`). */
  readonly sources: SourceLookup;
}

export const MessageScopeContext = createContext<MessageScope | null>(null);

/** The enclosing `KnowledgeMessage`'s scope, or null outside one. */
export function useMessageScope(): MessageScope | null {
  return useContext(MessageScopeContext);
}

export interface KnowledgeMessageProps {
  /**
   * The message being rendered, as it appears in `KnowledgeSources`' `messages` (the same object,
   * or one with the same `id`). Its evidence is the tool messages before it.
   */
  readonly message?: unknown;
  /** Or the message's `id`. */
  readonly messageId?: string | undefined;
  /**
   * Evidence the caller already resolved, instead of the thread's (`collectSources(...)`,
   * `sourceLookupFrom(...)`, `savedEvidenceLookup(...)`).
   */
  readonly sources?: SourceLookup | undefined;
  readonly children?: ReactNode;
}

interface Held {
  readonly key: unknown;
  readonly registry: CitationRegistry;
}

/**
 * One rendered message: the knowledge links inside resolve against the evidence before it (in
 * the enclosing `KnowledgeSources`), and its chips are numbered by a registry the links feed as
 * they render (first citation first; see `citationRegistry.ts`). A message not found in the
 * thread has no evidence: its knowledge links are inert labels. Renders no visible element of its
 * own: after its children, one hidden element per distinct short description of its chips (the
 * chips' `aria-describedby` targets, shared instead of one per chip).
 */
export function KnowledgeMessage({ message, messageId, sources, children }: KnowledgeMessageProps): ReactElement {
  const thread = useContext(SourcesContext);
  const descriptionPrefix = `dk-description${useId()}`;
  const target = messageId ?? message;
  const index = sources === undefined ? thread.indexOf(target) : -1;
  const key = idOf(target) ?? index;
  // The memory of resolved ids ("a chip never flips back") is keyed by the message's id, not its
  // content, so a streamed token keeps the same lookup object and the links that did not change
  // are not re-rendered.
  const base =
    sources ?? (index < 0 ? EMPTY_LOOKUP : thread.resolver.collectSources(thread.messages, index));
  const lookup = useRememberedLookup(base, key);
  // One registry per message (a new one when the host reuses this element for another message).
  const held = useRef<Held | null>(null);
  if (held.current === null || !Object.is(held.current.key, key)) {
    held.current = { key, registry: new CitationRegistry(lookup, thread.labels, descriptionPrefix) };
  }
  const registry = held.current.registry;
  registry.update(lookup, thread.labels);
  const scope = useMemo(
    () => ({ registry, labels: thread.labels, sources: lookup }),
    [registry, thread.labels, lookup],
  );
  return (
    <MessageScopeContext.Provider value={scope}>
      {children}
      <ChipDescriptions registry={registry} />
    </MessageScopeContext.Provider>
  );
}

/**
 * The message's chip descriptions, hidden (`aria-describedby` reads hidden targets). Drawn after
 * the message, so on a first render every link above has already claimed its source; later
 * claims (a streamed message) arrive through the registry's subscription.
 */
function ChipDescriptions({ registry }: { readonly registry: CitationRegistry }): ReactNode {
  const list = useSyncExternalStore(registry.subscribe, registry.descriptions, registry.descriptions);
  return list.map(([id, text]) => (
    <span key={id} id={id} hidden>
      {text}
    </span>
  ));
}
