/**
 * Citations are the CommonMark links the renderer shows (contracts/README.md §4).
 *
 * A citation is a CommonMark 0.31.2 link — inline or reference-style, its destination decoded as
 * CommonMark decodes it — whose destination the handle table names (`classifyDestination`, in
 * `handles.ts`, the grammar's one home).
 * What is a link is decided by micromark through `mdast-util-from-markdown`, the very parser
 * react-markdown renders with, so code spans, code blocks, HTML, autolinks and images are never
 * mistaken for citations and `KnowledgeMarkdown` finds its chips on the tree it renders
 * ({@link citationsInTree}). The Python twin uses pulldown-cmark; `contracts/vectors/citations.json`
 * and the CommonMark spec examples pin both to CommonMark.
 *
 * micromark is super-linear on a few hostile shapes; every parse here keeps within the budgets of
 * the one Markdown cost guard (`guard.ts`): {@link literalMarkersExtension} makes the inline
 * markers of a block over its budget text, and only the whole lines within the first
 * {@link MAX_MARKDOWN_CHARS} code points are parsed. Offsets are UTF-16 internally, reported in
 * code points.
 */

import { fromMarkdown } from "mdast-util-from-markdown";
import type { Nodes, Parents, Root } from "mdast";
import type { Code, Construct, Extension, State, TokenizeContext } from "micromark-util-types";
import type { VFile } from "vfile";

import { capNesting, literalRanges, MAX_MARKDOWN_CHARS, originalOffset, type MarkdownLimits } from "./guard.js";
import {
  CITATION_LABEL_PREFIX,
  classifyDestination,
  stripCitationPrefix,
  type CitationKind,
  type CitationReason,
} from "./handles.js";
import { applyEdits, CodePointCounter, codePointToUtf16Index } from "./text.js";

/**
 * Relabeling passes that replace a link by its label exactly as written; a later pass (reached
 * only by links nested deeper, i.e. hostile input) also escapes the brackets that could form one.
 */
export const MAX_PLAIN_RELABEL_PASSES = 4;

const UNESCAPE_RE = /\\([!"#$%&'()*+,\-./:;<=>?@[\\\]^_`{|}~])/g;

export interface Citation {
  readonly kind: CitationKind;
  /** The label without `citation:` and with backslash escapes resolved (display text). */
  readonly label: string;
  /** The link text exactly as written between its brackets. */
  readonly raw_label: string;
  /** The destination as CommonMark decodes it (for a reference link, its definition's). */
  readonly href: string;
  /** The 32-hex id (`shared`), `<hex>-<n>` (`native`), otherwise null. */
  readonly source_id: string | null;
  readonly reason: CitationReason | null;
  /** Code-point offset of the opening bracket. */
  readonly start: number;
  /** Code-point offset just past the link (its `)`, or a reference's last `]`). */
  readonly end: number;
}

// ---------------------------------------------------------------------------------------------
// Parsing

/**
 * The micromark extension that keeps a parse of `markdown` linear: in every block over the
 * limits, `*`, `_`, `~`, `[`, `]` and `!` are plain text (so no emphasis, link or image forms
 * there). Pass it with the other micromark extensions when parsing `markdown` itself.
 */
export function literalMarkersExtension(markdown: string, limits: MarkdownLimits = {}): Extension {
  const ranges = literalRanges(markdown, limits);
  return ranges.length === 0 ? {} : { text: literalMarkers(() => ranges) };
}

/** The constructs that read `*`, `_`, `~`, `[`, `]`, `!` as text inside `ranges()`. */
function literalMarkers(ranges: () => readonly number[]): NonNullable<Extension["text"]> {
  const construct: Construct = {
    name: "knowledgeLiteralMarker",
    tokenize(this: TokenizeContext, effects, ok, nok): State {
      const offset = this.now().offset;
      return (code: Code) => {
        if (!inRanges(ranges(), offset)) return nok(code);
        effects.enter("data");
        effects.consume(code);
        effects.exit("data");
        return ok;
      };
    },
  };
  // Tried before micromark's own constructs for these codes (extension constructs come first).
  return { 33: construct, 42: construct, 91: construct, 93: construct, 95: construct, 126: construct };
}

/** What {@link remarkCitations} found on the final mdast (`file.data.knowledgeCitations`). */
export interface TreeCitations {
  /** In document order. */
  readonly citations: readonly Citation[];
  /** By the UTF-16 source offset of each citation's `[` (what a rendered node's position says). */
  readonly byOffset: ReadonlyMap<number, Citation>;
}

declare module "vfile" {
  interface DataMap {
    knowledgeCitations: TreeCitations;
    /**
     * The guard's block ranges of `file.value`, when the caller already scanned it
     * (`scanMarkdown`): the parse then does not scan the text again.
     */
    knowledgeLiteralRanges: readonly number[];
  }
}

interface ParserHost {
  parser?: ((document: string, file: VFile) => unknown) | undefined;
  data(): { micromarkExtensions?: Extension[] };
}

/**
 * A unified (remark) plugin for a renderer: use it after remark-parse and every other remark
 * plugin. It keeps the parse within the guard's budgets and, as the last transformer, stores the
 * citations of the final mdast on `file.data.knowledgeCitations`, so the renderer numbers and
 * draws chips from the tree it renders.
 */
export function remarkCitations(
  this: unknown,
  limits?: MarkdownLimits | null,
): (tree: Root, file: VFile) => void {
  const host = this as ParserHost;
  let ranges: readonly number[] = [];
  // The extension's constructs are present only while the document has a block over budget, so
  // an ordinary message pays no extra attempt at each marker (micromark combines the extensions
  // afresh on every parse, so the object can change between parses).
  const markers = literalMarkers(() => ranges);
  const extension: Extension = {};
  const data = host.data();
  data.micromarkExtensions = [...(data.micromarkExtensions ?? []), extension];
  const parse = host.parser;
  if (parse !== undefined) {
    host.parser = (document, file) =>
      parseCapped(document, limits ?? {}, (head) => {
        const known = file.data.knowledgeLiteralRanges;
        ranges = known !== undefined && head === file.value ? known : literalRanges(head, limits ?? {});
        if (ranges.length > 0) extension.text = markers;
        else delete extension.text;
        return parse(head, file) as Root;
      });
  }
  return (tree, file) => {
    file.data.knowledgeCitations = citationsByOffset(tree, String(file.value));
  };
}

/** The mdast of `markdown`, parsed as react-markdown parses it (plain CommonMark, no plugin). */
export function parseMarkdown(markdown: string, limits: MarkdownLimits = {}): Root {
  return parseCapped(markdown, limits, (head) =>
    fromMarkdown(head, { extensions: [literalMarkersExtension(head, limits)] }),
  );
}

/**
 * `parse` applied to the whole lines of `markdown` within its first `maxMarkdownChars` code points;
 * the rest (if any) becomes one paragraph of plain text with its true position.
 */
function parseCapped(markdown: string, limits: MarkdownLimits, parse: (head: string) => Root): Root {
  const max = limits.maxMarkdownChars ?? MAX_MARKDOWN_CHARS;
  // No more code points than UTF-16 units: a short message needs no count.
  if (markdown.length <= max) return parse(markdown);
  let cut = codePointToUtf16Index(markdown, max);
  if (cut >= markdown.length) return parse(markdown);
  // Back to the start of the line holding the limit, so the tail is whole lines.
  while (cut > 0 && markdown.charCodeAt(cut - 1) !== 0x0a && markdown.charCodeAt(cut - 1) !== 0x0d) cut -= 1;
  const tree = parse(markdown.slice(0, cut));
  const start = pointAt(markdown, cut);
  const end = pointAt(markdown, markdown.length, start, cut);
  const position = { start, end };
  tree.children.push({ type: "paragraph", position, children: [{ type: "text", value: markdown.slice(cut), position }] });
  if (tree.position !== undefined) tree.position = { start: tree.position.start, end };
  return tree;
}

/** The unist point of UTF-16 offset `offset` (line and column counted from `from`). */
function pointAt(
  markdown: string,
  offset: number,
  from: { line: number; column: number; offset: number } = { line: 1, column: 1, offset: 0 },
  fromIndex = 0,
): { line: number; column: number; offset: number } {
  let { line, column } = from;
  for (let i = fromIndex; i < offset; i++) {
    const unit = markdown.charCodeAt(i);
    if (unit === 0x0a || (unit === 0x0d && markdown.charCodeAt(i + 1) !== 0x0a)) {
      line += 1;
      column = 1;
    } else column += 1;
  }
  return { line, column, offset };
}

/**
 * Every citation in `markdown`, in document order (never throws on a string). The text is parsed
 * as the renderer parses it, under the guard's per-line budget (`capNesting`), with offsets
 * mapped back to `markdown`: a link is a chip exactly when it is found here.
 */
export function findCitations(markdown: string, limits: MarkdownLimits = {}): Citation[] {
  if (typeof markdown !== "string") return [];
  const links = scanCapped(markdown, limits, false).links;
  const counter = new CodePointCounter(markdown);
  return links.map((link) => Object.freeze({ ...link.citation, start: counter.at(link.start), end: counter.at(link.end) }));
}

/**
 * {@link scanTree} of `markdown` parsed under the per-line budget, in offsets of `markdown`
 * itself (labels re-read from it).
 */
function scanCapped(markdown: string, limits: MarkdownLimits, escape: boolean): TreeScan {
  const capped = capNesting(markdown);
  if (capped.edits.length === 0) return scanTree(parseMarkdown(markdown, limits), markdown, escape);
  const scan = scanTree(parseMarkdown(capped.markdown, limits), capped.markdown, escape);
  const back = (offset: number): number => originalOffset(capped.edits, offset);
  const links = scan.links.map((link): FoundLink => {
    const start = back(link.start);
    const labelEnd = back(link.labelEnd);
    const rawLabel = markdown.slice(start + 1, labelEnd);
    return {
      citation: { ...link.citation, raw_label: rawLabel, label: stripCitationPrefix(rawLabel).replace(UNESCAPE_RE, "$1") },
      start,
      labelEnd,
      end: back(link.end),
      block: link.block,
      brackets: link.brackets.map(back),
    };
  });
  const brackets = new Map<number, number[]>();
  for (const [block, offsets] of scan.brackets) brackets.set(block, offsets.map(back));
  return { links, brackets };
}

/**
 * The citations of `tree`, the mdast parsed from `markdown` (with positions), in document order.
 * The renderer calls this on the tree it renders.
 */
export function citationsInTree(tree: Root, markdown: string): Citation[] {
  const links = scanTree(tree, markdown, false).links;
  const counter = new CodePointCounter(markdown);
  return links.map((link) => {
    const start = counter.at(link.start);
    return Object.freeze({ ...link.citation, start, end: counter.at(link.end) });
  });
}

/** The citations of `tree` (parsed from `markdown`), also keyed by their UTF-16 start offset. */
export function citationsByOffset(tree: Root, markdown: string): TreeCitations {
  const links = scanTree(tree, markdown, false).links;
  const counter = new CodePointCounter(markdown);
  const byOffset = new Map<number, Citation>();
  const citations = links.map((link) => {
    const start = counter.at(link.start);
    const citation = Object.freeze({ ...link.citation, start, end: counter.at(link.end) });
    byOffset.set(link.start, citation);
    return citation;
  });
  return { citations: Object.freeze(citations), byOffset };
}

// ---------------------------------------------------------------------------------------------
// Relabeling

/**
 * `markdown` with every `shared` citation whose id is not in `keepIds` replaced by its written
 * label without the leading `citation:`; everything else is left byte-identical.
 *
 * Replacing a link by its label can form a new one (an outer link whose label no longer holds
 * one, or a label `[x]` meeting a following `(#…)`), so passes repeat; after
 * {@link MAX_PLAIN_RELABEL_PASSES} a pass also backslash-escapes the literal brackets of the blocks
 * it changes (they render the same but can form no link), so at most that many + 1 linear passes
 * reach the fixpoint, whatever the nesting.
 */
export function relabelOrphans(markdown: string, keepIds: Iterable<string>): string {
  const keep = new Set(keepIds);
  let text = markdown;
  for (let pass = 1; ; pass++) {
    const relabeled = relabelOnce(text, keep, pass > MAX_PLAIN_RELABEL_PASSES);
    if (relabeled === text) return text;
    text = relabeled;
  }
}

function relabelOnce(markdown: string, keep: ReadonlySet<string>, escape: boolean): string {
  const scan = scanCapped(markdown, {}, escape);
  const chosen = scan.links.filter(
    ({ citation }) => citation.kind === "shared" && citation.source_id !== null && !keep.has(citation.source_id),
  );
  if (chosen.length === 0) return markdown;
  const edits: Array<readonly [number, number, string]> = [];
  if (escape) {
    const blocks = new Set(chosen.map((link) => link.block));
    for (const block of blocks) {
      for (const offset of scan.brackets.get(block) ?? []) edits.push([offset, offset, "\\"]);
    }
  }
  for (const link of chosen) {
    let labelStart = link.start + 1;
    if (markdown.startsWith(CITATION_LABEL_PREFIX, labelStart)) labelStart += CITATION_LABEL_PREFIX.length;
    if (!escape) {
      edits.push([link.start, link.end, markdown.slice(labelStart, link.labelEnd)]);
      continue;
    }
    const pieces: string[] = [];
    let cursor = labelStart;
    for (const offset of link.brackets) {
      if (offset < labelStart) continue;
      pieces.push(markdown.slice(cursor, offset), "\\");
      cursor = offset;
    }
    pieces.push(markdown.slice(cursor, link.labelEnd));
    edits.push([link.start, link.end, pieces.join("")]);
  }
  edits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  return applyEdits(markdown, edits);
}

// ---------------------------------------------------------------------------------------------
// The tree walk

/** A citation link found in the tree, in UTF-16 offsets of the markdown. */
interface FoundLink {
  readonly citation: Omit<Citation, "start" | "end">;
  readonly start: number;
  /** Offset of the `]` closing the link text. */
  readonly labelEnd: number;
  readonly end: number;
  /** The leaf block (paragraph, heading, table cell) holding the link. */
  readonly block: number;
  /** Literal, unescaped brackets in the link text (only collected for an escaping pass). */
  readonly brackets: readonly number[];
}

interface TreeScan {
  readonly links: FoundLink[];
  /** Per leaf block: literal, unescaped brackets outside every link (escaping pass only). */
  readonly brackets: Map<number, number[]>;
}

const LEAF_BLOCKS: ReadonlySet<string> = new Set(["paragraph", "heading", "tableCell"]);

interface Frame {
  readonly node: Nodes;
  readonly block: number;
  /** The brackets list of the link this node is inside, if any. */
  readonly inLink: number[] | null;
}

function scanTree(tree: Root, markdown: string, collectBrackets: boolean): TreeScan {
  // First definition of a label wins (CommonMark §4.7); micromark makes a reference a link only
  // when a definition exists, so every linkReference finds its url here.
  const definitions = new Map<string, string>();
  const links: FoundLink[] = [];
  const outside = new Map<number, number[]>();
  let blocks = 0;
  const stack: Frame[] = [{ node: tree, block: -1, inLink: null }];
  const pendingLinks: Array<{ frame: Frame; brackets: number[] }> = [];
  // Iterative depth-first walk in document order (containers can nest arbitrarily deep); the
  // frames are kept, in that order, only when an escaping pass needs the text nodes' brackets.
  const order: Frame[] = [];
  while (stack.length > 0) {
    const frame = stack.pop() as Frame;
    const { node } = frame;
    if (node.type === "definition" && !definitions.has(node.identifier)) {
      definitions.set(node.identifier, node.url);
    }
    if (collectBrackets) order.push(frame);
    // Nothing inside an image or an autolink is a citation, and no bracket there is escaped
    // (an autolink's text is its address, where a backslash escapes nothing).
    if (node.type === "image" || node.type === "imageReference") continue;
    if (!("children" in node)) continue;
    let block = frame.block;
    if (LEAF_BLOCKS.has(node.type)) block = blocks++;
    let inLink = frame.inLink;
    if (node.type === "link" || node.type === "linkReference") {
      if (!bracketAt(markdown, node)) continue;
      inLink = [];
      pendingLinks.push({ frame, brackets: inLink });
    }
    const children = (node as Parents).children;
    for (let i = children.length - 1; i >= 0; i--) {
      stack.push({ node: children[i] as Nodes, block, inLink });
    }
  }
  if (collectBrackets) {
    for (const { node, block, inLink } of order) {
      if (node.type !== "text") continue;
      const found = literalBrackets(markdown, node);
      if (found.length === 0) continue;
      if (inLink !== null) inLink.push(...found);
      else {
        const list = outside.get(block);
        if (list === undefined) outside.set(block, found);
        else list.push(...found);
      }
    }
  }
  for (const { frame, brackets } of pendingLinks) {
    const link = foundLink(frame, markdown, definitions, brackets);
    if (link !== null) links.push(link);
  }
  return { links, brackets: outside };
}

function bracketAt(markdown: string, node: Nodes): boolean {
  const offset = node.position?.start.offset;
  // Autolinks (`<https://…>`) and GFM literal autolinks are links without brackets.
  return offset !== undefined && markdown.charCodeAt(offset) === 0x5b;
}

function foundLink(
  frame: Frame,
  markdown: string,
  definitions: ReadonlyMap<string, string>,
  brackets: number[],
): FoundLink | null {
  const node = frame.node;
  if (node.type !== "link" && node.type !== "linkReference") return null;
  const start = node.position?.start.offset;
  const end = node.position?.end.offset;
  if (start === undefined || end === undefined) return null;
  const href = node.type === "link" ? node.url : definitions.get(node.identifier);
  if (href === undefined) return null;
  const labelEnd = labelEndOf(markdown, node, start, end);
  if (labelEnd === -1) return null;
  const rawLabel = markdown.slice(start + 1, labelEnd);
  const found = classifyDestination(rawLabel, href);
  if (found === null) return null;
  return {
    citation: {
      kind: found.kind,
      label: stripCitationPrefix(rawLabel).replace(UNESCAPE_RE, "$1"),
      raw_label: rawLabel,
      href,
      source_id: found.sourceId,
      reason: found.reason,
    },
    start,
    labelEnd,
    end,
    block: frame.block,
    brackets,
  };
}

/** The `]` closing the link text: the first one after the last child (only white space between). */
function labelEndOf(markdown: string, node: Parents, start: number, end: number): number {
  const last = node.children[node.children.length - 1];
  let i = last?.position?.end.offset ?? start + 1;
  while (i < end && markdown.charCodeAt(i) !== 0x5d) i += 1;
  return i < end ? i : -1;
}

/** UTF-16 offsets of the brackets a text node's source writes literally (not escaped). */
function literalBrackets(markdown: string, node: Nodes): number[] {
  const from = node.position?.start.offset;
  const to = node.position?.end.offset;
  if (from === undefined || to === undefined) return [];
  const found: number[] = [];
  for (let i = from; i < to; i++) {
    const unit = markdown.charCodeAt(i);
    if (unit === 0x5c && i + 1 < to && isAsciiPunctuation(markdown.charCodeAt(i + 1))) i += 1;
    else if (unit === 0x5b || unit === 0x5d) found.push(i);
  }
  return found;
}

function isAsciiPunctuation(unit: number): boolean {
  return (
    (unit >= 0x21 && unit <= 0x2f) ||
    (unit >= 0x3a && unit <= 0x40) ||
    (unit >= 0x5b && unit <= 0x60) ||
    (unit >= 0x7b && unit <= 0x7e)
  );
}

function inRanges(ranges: readonly number[], offset: number): boolean {
  let lo = 0;
  let hi = ranges.length / 2;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((ranges[2 * mid + 1] as number) <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo < ranges.length / 2 && (ranges[2 * lo] as number) <= offset;
}
