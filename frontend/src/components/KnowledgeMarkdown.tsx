/**
 * Assistant Markdown with verified knowledge citations.
 *
 * One parse per message: micromark (`mdast-util-from-markdown`, exactly as react-markdown's
 * remark-parse calls it, with the caller's remark plugins) builds the tree, the citations are
 * found on that tree after the remark plugins ran (`citationsInTree`), and the same tree becomes
 * hast (no raw HTML: HTML in the text stays text; rehype-sanitize with the default schema runs
 * last, keeping its `user-content-` clobber prefix) and React elements through
 * hast-util-to-jsx-runtime, as react-markdown does. Each rendered link is looked up by its source
 * offset among the citations found, so a link is a chip exactly when `findCitations` reports it,
 * and chip numbers follow the same list. Images never load: they render as a text placeholder.
 * Every href the component emits passes this package's allowlist (`url.ts`).
 */

import {
  memo,
  useCallback,
  useId,
  useMemo,
  useRef,
  type Key,
  type ComponentPropsWithoutRef,
  type ReactElement,
  type ReactNode,
} from "react";
import type { Root as HastRoot } from "hast";
import { toJsxRuntime } from "hast-util-to-jsx-runtime";
import { Fragment, jsx, jsxs } from "react/jsx-runtime";
import rehypeSanitize, { defaultSchema, type Options as SanitizeSchema } from "rehype-sanitize";
import remarkParse from "remark-parse";
import remarkRehype from "remark-rehype";
import { unified, type PluggableList, type Processor } from "unified";
import { VFile } from "vfile";

import { remarkCitations, type Citation, type TreeCitations } from "../citations.js";
import { stripCitationPrefix } from "../handles.js";
import { rememberCitations } from "../citationMemo.js";
import type { ResolvedSource, SourceLookup } from "../lookup.js";
import { describeSource } from "../resolve.js";
import { InertCitation, WebCitation, chipElements } from "./CitationChip.js";
import { shortDescription } from "./description.js";
import { CitationRegistry } from "./citationRegistry.js";
import { isPinned, openChip, useChipGroup, type ChipGroup } from "./chipState.js";
import { citationTarget, hastText } from "./KnowledgeLink.js";
import { ordinaryLink } from "./ordinaryLink.js";
import { scanMarkdown } from "../guard.js";
import { MessageBoundary, PlainTextMessage } from "./MessageBoundary.js";
import { markdownOf } from "./messageText.js";
import { mergeLabels, type KnowledgeLabels } from "./labels.js";
import { useCitationLookup, type CitationSourceProps } from "./useCitationLookup.js";

/**
 * The sanitize schema: rehype-sanitize's default (GitHub-style) schema, with its `user-content-`
 * clobber prefix, unchanged.
 */
export const KNOWLEDGE_SANITIZE_SCHEMA: SanitizeSchema = defaultSchema;

export type KnowledgeMarkdownProps = CitationSourceProps & {
  /**
   * The assistant message's Markdown (default: the text of `messages[messageIndex]`, so a
   * LangGraph SDK `Message` list can be passed as it is).
   */
  readonly markdown?: string | undefined;
  /**
   * True while the message is still streaming: a citation link still being written at the end
   * (`[citation:A](#knowledge-source-01…`) is held back and shown as a pending marker instead of
   * raw text.
   */
  readonly streaming?: boolean | undefined;
  /** Extra remark plugins (e.g. remark-gfm). They run before rehype-sanitize. Pass a stable array. */
  readonly remarkPlugins?: PluggableList | undefined;
  /** Extra rehype plugins. They run before rehype-sanitize, which always runs last. Stable array. */
  readonly rehypePlugins?: PluggableList | undefined;
  /** Extra class names for the wrapping `<div class="dk-markdown">`. */
  readonly className?: string | undefined;
  /** Translated strings (merged over the English defaults). Pass a stable object. */
  readonly labels?: Partial<KnowledgeLabels> | undefined;
};

/** What a message's links and images render against (computed once per message and lookup). */
interface MessageContext {
  /** The message's citations, already claimed in document order: numbers and suffixes. */
  readonly registry: CitationRegistry;
  /** The citations found on the rendered tree, by the UTF-16 source offset of their `[`. */
  readonly citations: ReadonlyMap<number, Citation>;
  readonly labels: KnowledgeLabels;
}

/** The chips of one rendering of a message: counted in document order as they are made. */
interface ChipPass {
  readonly group: ChipGroup;
  readonly open: number;
  readonly ids: string;
  count: number;
  /** Description text → its element id (chips that describe alike share one element). */
  readonly descriptions: Map<string, string>;
}

interface PositionedNode {
  readonly position?: { readonly start?: { readonly offset?: number } };
}

/** What hast-util-to-jsx-runtime passes a component (`passNode`). */
interface ExtraProps {
  readonly node?: unknown;
}

type LinkProps = ComponentPropsWithoutRef<"a"> & ExtraProps;

/** A rendered link: a chip, an inert label, a web citation or an ordinary (allowlisted) link. */
function linkElement(
  { node, href, children }: LinkProps,
  key: Key | undefined,
  context: MessageContext,
  chips: ChipPass,
): ReactElement {
  const { registry, citations, labels } = context;
  const offset = (node as PositionedNode | undefined)?.position?.start?.offset;
  const citation = offset === undefined ? undefined : citations.get(offset);
  if (citation === undefined) return ordinaryLink(href, labels, children, key);
  // The label text is needed only where the model's label is shown (never on a chip).
  const labelText = (): string => stripCitationPrefix(hastText(node));
  if (citation.kind === "web") {
    // The sanitized href (the sanitizer keeps http(s)); the found one if a plugin dropped it.
    return <WebCitation key={key} label={labelText()} href={href ?? citation.href} labels={labels} />;
  }
  // The same rule as KnowledgeLink's (the registry already holds every citation: claims are no-ops).
  const target = citationTarget(registry, citation.kind, citation.source_id, citation.reason, citation.raw_label, citation.href);
  if (target === null) return ordinaryLink(href, labels, children, key);
  if (target.kind === "inert") return <InertCitation key={key} label={labelText()} reason={target.reason} labels={labels} />;
  return chipOf(target.source, registry.numberOf(target.id), registry.suffixOf(target.id), labels, key, chips);
}

// Chips are made in document order: hast-util-to-jsx-runtime finishes each link before the next
// one starts, and links do not nest, so a chip's count is its index among the message's chips.
function chipOf(
  source: ResolvedSource,
  number: number | undefined,
  suffix: string | undefined,
  labels: KnowledgeLabels,
  key: Key | undefined,
  chips: ChipPass,
): ReactElement {
  const index = chips.count++;
  const display = describeSource(source);
  const description = shortDescription(display, labels);
  let descriptionId = chips.descriptions.get(description);
  const ownsDescription = descriptionId === undefined;
  if (descriptionId === undefined) {
    descriptionId = `${chips.ids}-d${chips.descriptions.size}`;
    chips.descriptions.set(description, descriptionId);
  }
  const open = index === chips.open;
  return chipElements(
    {
      display,
      number,
      suffix,
      labels,
      descriptionId,
      ownsDescription,
      previewId: open ? `${chips.ids}-preview` : null,
      pinned: open && isPinned(chips.group.state),
      anchor: () => chips.group.chipAt(index),
      onDismiss: chips.group.dismiss,
    },
    key,
  );
}

function imageElement(
  { alt }: ComponentPropsWithoutRef<"img"> & ExtraProps,
  key: Key | undefined,
  labels: KnowledgeLabels,
): ReactElement {
  const text = typeof alt === "string" && alt !== "" ? `${labels.image}: ${alt}` : labels.image;
  return (
    <span key={key} className="dk-image" title={labels.imageHelp}>
      [{text}]
    </span>
  );
}

// Placeholders that only mark, for the element factory below, where hast-util-to-jsx-runtime
// meets a link or an image (so it passes the hast node); they are never rendered. Links become
// their elements right there, without a component of their own in between: a thread of many
// cited messages renders no extra component (nor context read) per link.
const LINK = (): null => null;
const IMAGE = (): null => null;
const COMPONENTS = { a: LINK, img: IMAGE };

type ElementFactory = typeof jsx;

/** The React elements of one message's hast, its links and images drawn against `context`. */
function elementsOf(hast: HastRoot, context: MessageContext, group: ChipGroup, ids: string): ReactNode {
  const chips: ChipPass = { group, open: openChip(group.state), ids, count: 0, descriptions: new Map() };
  const wrap =
    (factory: ElementFactory): ElementFactory =>
    (type, props, key) => {
      if (type === LINK) return linkElement(props as LinkProps, key, context, chips);
      if (type === IMAGE) return imageElement(props as ComponentPropsWithoutRef<"img">, key, context.labels);
      return factory(type, props, key);
    };
  return toJsxRuntime(hast, {
    Fragment,
    jsx: wrap(jsx),
    jsxs: wrap(jsxs),
    components: COMPONENTS,
    ignoreInvalidStyle: true,
    passKeys: true,
    passNode: true,
  });
}

// A citation still being written at the very end of a streaming message.
const PENDING_TAIL =
  /\[(?:c|ci|cit|cita|citat|citati|citatio|citation|citation:[^[\]\n`]*(?:\]|\]\([^()\s`]*)?)$/;
const FENCE_LINE = /^ {0,3}(?:```|~~~)/gm;
// UTF-16 units of the message end searched for a pending citation: well above the longest link a
// writer emits (its label is a title of at most 512 code points, escaped), and a fixed bound so
// the check costs the same on every streamed update however long the message has grown.
const PENDING_TAIL_UNITS = 4_200;

/** `markdown` without a trailing, unfinished citation link (outside an open code fence). */
export function splitPendingCitation(markdown: string): { readonly body: string; readonly pending: boolean } {
  const match = PENDING_TAIL.exec(
    markdown.length > PENDING_TAIL_UNITS ? markdown.slice(-PENDING_TAIL_UNITS) : markdown,
  );
  if (match === null) return { body: markdown, pending: false };
  if ((markdown.match(FENCE_LINE)?.length ?? 0) % 2 === 1) return { body: markdown, pending: false };
  return { body: markdown.slice(0, markdown.length - match[0].length), pending: true };
}

interface BodyProps {
  readonly markdown: string;
  readonly lookup: SourceLookup;
  readonly streaming: boolean;
  readonly remarkPlugins: PluggableList | undefined;
  readonly rehypePlugins: PluggableList | undefined;
  readonly className: string | undefined;
  readonly labels: Partial<KnowledgeLabels> | undefined;
}

const NO_PLUGINS: PluggableList = [];

interface TreeNode {
  type: string;
  value?: unknown;
  children?: TreeNode[];
}

/** Raw HTML in the Markdown becomes literal text (it is shown, never parsed or executed). */
function rehypeRawAsText() {
  const walk = (node: TreeNode): void => {
    if (node.children === undefined) return;
    for (const child of node.children) {
      if (child.type === "raw") child.type = "text";
      else walk(child);
    }
  };
  return (tree: TreeNode): void => walk(tree);
}

/** The processor of one plugin configuration: react-markdown's, plus citation finding. */
function createProcessor(remarkPlugins: PluggableList, rehypePlugins: PluggableList): Processor {
  const byRehype = processors.get(remarkPlugins);
  const known = byRehype?.get(rehypePlugins);
  if (known !== undefined) return known;
  const processor = buildProcessor(remarkPlugins, rehypePlugins);
  if (byRehype === undefined) processors.set(remarkPlugins, new WeakMap([[rehypePlugins, processor]]));
  else byRehype.set(rehypePlugins, processor);
  return processor;
}

// One frozen processor per plugin configuration (the arrays are asked to be stable), shared by
// every message: building one runs every plugin's attacher, which a thread of many messages would
// otherwise pay once per message. Parsing is synchronous, so sharing it is safe.
const processors = new WeakMap<PluggableList, WeakMap<PluggableList, Processor>>();

function buildProcessor(remarkPlugins: PluggableList, rehypePlugins: PluggableList): Processor {
  return unified()
    .use(remarkParse)
    .use(remarkPlugins)
    .use(remarkCitations)
    .use(remarkRehype, { allowDangerousHtml: true })
    .use(rehypeRawAsText)
    .use(rehypePlugins)
    .use(rehypeSanitize, KNOWLEDGE_SANITIZE_SCHEMA)
    .freeze() as unknown as Processor;
}

interface ParsedMessage extends TreeCitations {
  readonly hast: HastRoot;
}

const NO_RANGES: readonly number[] = [];
const NO_CITATIONS: TreeCitations = { citations: [], byOffset: new Map() };

/**
 * One parse of `markdown`: its hast and the citations found on the mdast it came from. `literal`
 * is the guard's block ranges of `markdown`, already scanned (so the parse does not scan again).
 */
function parseMessage(processor: Processor, markdown: string, literal: readonly number[]): ParsedMessage {
  const file = new VFile(markdown);
  file.data.knowledgeLiteralRanges = literal;
  const hast = processor.runSync(processor.parse(file), file) as unknown as HastRoot;
  return { hast, ...(file.data.knowledgeCitations ?? NO_CITATIONS) };
}

// Pure (as PanelBody in SourcesPanel.tsx): a host using only the glue drops the parser pipeline.
const MarkdownBody = /* @__PURE__ */ memo(function MarkdownBody({
  markdown,
  lookup,
  streaming,
  remarkPlugins,
  rehypePlugins,
  className,
  labels,
}: BodyProps): ReactElement {
  const merged = useMemo(() => mergeLabels(labels), [labels]);
  const { body, pending } = useMemo(
    () => (streaming ? splitPendingCitation(markdown) : { body: markdown, pending: false }),
    [markdown, streaming],
  );
  const processor = useMemo(
    () =>
      createProcessor(
        remarkPlugins ?? NO_PLUGINS,
        rehypePlugins ?? NO_PLUGINS,
      ),
    [remarkPlugins, rehypePlugins],
  );
  // The guard runs first, so what is parsed (and numbered) is exactly what is rendered.
  const guarded = useMemo(() => scanMarkdown(body), [body]);
  const source = guarded.kind === "plain" ? "" : guarded.markdown;
  const parsed = useMemo(() => {
    const result = parseMessage(processor, source, guarded.kind === "plain" ? NO_RANGES : guarded.literal);
    // The same parse findCitations would make (no host plugins, nothing capped): SourcesPanel
    // and the resolver reuse it instead of parsing the message a second time.
    if (remarkPlugins === undefined && guarded.kind === "markdown" && source === markdown) {
      rememberCitations(source, result.citations);
    }
    return result;
  }, [processor, source, remarkPlugins, guarded, markdown]);
  // The one parse's citations, claimed in document order: numbers follow first citation.
  const context = useMemo(
    () => ({ registry: CitationRegistry.of(lookup, parsed.citations, merged), citations: parsed.byOffset, labels: merged }),
    [lookup, parsed, merged],
  );
  // One open-preview state for all the message's chips; their events are delegated to the root.
  const root = useRef<HTMLDivElement>(null);
  const ids = `dk-${useId()}`;
  const chipsOf = useCallback(() => root.current?.querySelectorAll(".dk-chip") ?? [], []);
  const group = useChipGroup(`${ids}-preview`, chipsOf);
  const content = useMemo(
    () => elementsOf(parsed.hast, context, group, ids),
    // `group` is a new object each render, of stable functions and the state: the state decides.
    [parsed, context, group.state, ids],
  );
  if (guarded.kind === "plain") {
    return <PlainTextMessage text={guarded.text} note={merged.plainFallback} className={className} />;
  }
  return (
    <div ref={root} className={className === undefined ? "dk-markdown" : `dk-markdown ${className}`} {...group.handlers}>
      {content}
      {pending && <span className="dk-pending" aria-hidden="true" title={merged.pending} />}
    </div>
  );
});

/**
 * Renders one assistant message's Markdown with its knowledge citations resolved.
 *
 * Give it either the loaded history (`messages` + `messageIndex`: evidence is read from the tool
 * messages *before* `messageIndex`, verified and cached per message object) or a precomputed
 * `sources` lookup. Citations become:
 *
 * * `[citation:T](#knowledge-source-<id>)`, `#user-content-knowledge-source-<id>`, native
 *   `#knowledge-<hex>-<n>` / `#user-content-knowledge-<hex>-<n>` with verified evidence → a chip
 *   (`<button>`) whose preview shows provider, verified title, excerpt and only the locators the
 *   evidence carries;
 * * the same with no evidence in the loaded history → an inert "evidence not loaded" label, which
 *   becomes a chip when the evidence arrives (and, once a chip, stays one for this message);
 * * a malformed `#knowledge-source-…` destination or a `citation:` label with an unsupported
 *   destination → an inert label with its reason;
 * * `[citation:T](https://…)` → an external link; any other link → a link only if its address
 *   passes the allowlist, else plain text. Images render as a text placeholder.
 *
 * Re-rendering with a new `messages` array whose earlier messages are the same objects (a
 * streamed token) re-renders only messages whose Markdown or visible evidence changed.
 *
 * @example
 * <KnowledgeMarkdown markdown={text} messages={thread.messages} messageIndex={i} streaming={busy} />
 */
export function KnowledgeMarkdown(props: KnowledgeMarkdownProps): ReactElement {
  const markdown = markdownOf(props);
  const lookup = useCitationLookup(props, markdown);
  return (
    <MessageBoundary text={markdown} labels={props.labels} className={props.className}>
      <MarkdownBody
        markdown={markdown}
        lookup={lookup}
        streaming={props.streaming === true}
        remarkPlugins={props.remarkPlugins}
        rehypePlugins={props.rehypePlugins}
        className={props.className}
        labels={props.labels}
      />
    </MessageBoundary>
  );
}
