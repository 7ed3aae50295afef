/**
 * The render benchmarks' transcript, shared so that the jsdom bench (bench-render.mjs) and the
 * Chromium bench (bench-render-browser.mjs, driven by bench-render-chromium.mjs) render exactly the
 * same messages through exactly the same components.
 *
 * A history of `turns` turns of human, AI tool call, tool (`sourcesPerTool` valid shared sources),
 * AI answer, human; the last human message gives its slot to the streaming answer (withAnswer), so
 * 200 turns make 1,000 messages. The components come in as arguments: each bench loads React and
 * the package its own way (Vite SSR under jsdom, a Vite bundle in the browser).
 */

const cite = (record, label = "source") => `[citation:${label}](#knowledge-source-${record.id})`;

/** The history (without the streaming answer) and the streaming answer's text. */
export function buildHistory({ turns, sourcesPerTool, sourceId }) {
  const history = [];
  let firstRecord = null;
  for (let turn = 0; turn < turns; turn++) {
    const records = [];
    for (let k = 0; k < sourcesPerTool; k++) {
      const identity = {
        provider: "lightrag",
        title: `Handbook ${turn}, section ${k}`,
        excerpt: `Turn ${turn} excerpt ${k}: deer eat acorns, browse shrubs and graze in open meadows at dusk.`,
        ...(k % 3 === 0 ? { dataset_name: "Wildlife" } : {}),
        ...(k % 4 === 0 ? { page: k + 1 } : {}),
        ...(k % 5 === 0 ? { url: `https://docs.example/handbook/${turn}/${k}` } : {}),
      };
      records.push({ id: sourceId(identity), ...identity });
    }
    firstRecord ??= records[0];
    const content = records
      .map((r, i) => `[${i + 1}] ${cite(r, r.title)}\n${r.excerpt}`)
      .join("\n\n");
    const answer =
      `## Answer ${turn}\n\nDeer eat acorns ${cite(records[0])} and browse shrubs ${cite(records[1])}. ` +
      `They graze at dusk ${cite(records[2])}, as noted before ${cite(firstRecord)}.\n\n` +
      `- point one ${cite(records[3])}\n- point two with \`code\` and [a link](https://example.com)\n`;
    history.push(
      { type: "human", id: `h${turn}`, content: `Question ${turn}: what do deer eat?` },
      { type: "ai", id: `c${turn}`, content: "", tool_calls: [{ name: "knowledge_search", id: `call${turn}`, args: {} }] },
      { type: "tool", id: `t${turn}`, name: "knowledge_search", tool_call_id: `call${turn}`, content, artifact: { knowledge_sources_version: 1, knowledge_sources: records } },
      { type: "ai", id: `a${turn}`, content: answer },
      { type: "human", id: `k${turn}`, content: "Thanks." },
    );
  }
  history.pop(); // the streaming answer takes the last slot
  const lastTool = history.findLast((m) => m.type === "tool");
  const streamingBase = `Streaming answer citing ${cite(lastTool.artifact.knowledge_sources[0])}`;
  return { history, streamingBase };
}

/**
 * The transcript as the chat page shows it (KnowledgeMarkdown + SourcesPanel, closed; `panel:
 * false` leaves the panel out), and the floor: the same messages through plain react-markdown +
 * rehype-sanitize (no citations resolved, no sources panel).
 */
export function transcriptComponents({ h, Markdown, rehypeSanitize, KnowledgeMarkdown, SourcesPanel }) {
  function Transcript({ messages, resolver, panel = true }) {
    const last = messages.length - 1;
    return h(
      "div",
      null,
      messages.map((message, index) => {
        if (message.type === "human") return h("p", { key: message.id }, message.content);
        if (message.type !== "ai" || message.content === "") return null;
        const common = { markdown: message.content, messages, messageIndex: index, resolver };
        return h(
          "article",
          { key: message.id },
          h(KnowledgeMarkdown, { ...common, streaming: index === last }),
          panel ? h(SourcesPanel, { ...common, defaultOpen: false }) : null,
        );
      }),
    );
  }

  const PLAIN_REHYPE = [rehypeSanitize];
  function PlainTranscript({ messages }) {
    return h(
      "div",
      null,
      messages.map((message) => {
        if (message.type === "human") return h("p", { key: message.id }, message.content);
        if (message.type !== "ai" || message.content === "") return null;
        return h(
          "article",
          { key: message.id },
          h("div", null, h(Markdown, { rehypePlugins: PLAIN_REHYPE }, message.content)),
        );
      }),
    );
  }

  return { Transcript, PlainTranscript };
}

const SHARED_HANDLE = /^#(?:user-content-)?knowledge-source-([0-9a-f]{32})$/;

/**
 * What the semantic floor names and describes each cited source by: the same accessible name
 * title and short description as the chips (`describe(record)` → `{title, description}`, from the
 * package's own display functions), precomputed outside any timed render and unverified — the
 * floor pays for the semantics alone, never for verification.
 */
export function semanticOracle(history, describe) {
  const oracle = new Map();
  for (const message of history) {
    if (message.type !== "tool") continue;
    for (const record of message.artifact.knowledge_sources) if (!oracle.has(record.id)) oracle.set(record.id, describe(record));
  }
  return oracle;
}

/**
 * The semantic floor (issue 32 item 7): plain react-markdown + rehype-sanitize whose citation
 * links render the same accessible button as a closed chip — the same name ("Source 2: Title",
 * numbered in first-citation order), state (aria-expanded=false) and description (a hidden
 * element with the provider and locators, shared by the message's buttons that describe alike) —
 * with no verification, no preview machinery and no stylesheet classes.
 */
export function floorComponents({ h, Fragment, useId, Markdown, rehypeSanitize }) {
  const PLAIN_REHYPE = [rehypeSanitize];
  function FloorAnswer({ text, oracle }) {
    const ids = useId();
    // Counted as react-markdown renders the links, which it does in document order.
    const numbers = new Map();
    const described = new Map();
    const a = ({ href, children }) => {
      const match = SHARED_HANDLE.exec(href ?? "");
      const info = match === null ? undefined : oracle.get(match[1]);
      if (info === undefined) return h("a", { href }, children);
      let number = numbers.get(match[1]);
      if (number === undefined) numbers.set(match[1], (number = numbers.size + 1));
      let descriptionId = described.get(info.description);
      const owns = descriptionId === undefined;
      if (owns) described.set(info.description, (descriptionId = `${ids}-d${described.size}`));
      return h(
        Fragment,
        null,
        h(
          "button",
          { type: "button", "aria-label": `Source ${number}: ${info.title}`, "aria-expanded": false, "aria-describedby": descriptionId },
          info.title,
        ),
        owns ? h("span", { id: descriptionId, hidden: true }, info.description) : null,
      );
    };
    return h(Markdown, { rehypePlugins: PLAIN_REHYPE, components: { a } }, text);
  }

  function FloorTranscript({ messages, oracle }) {
    return h(
      "div",
      null,
      messages.map((message) => {
        if (message.type === "human") return h("p", { key: message.id }, message.content);
        if (message.type !== "ai" || message.content === "") return null;
        return h("article", { key: message.id }, h("div", null, h(FloorAnswer, { text: message.content, oracle })));
      }),
    );
  }

  return { FloorTranscript };
}

/**
 * The glue as a react-markdown host uses it: KnowledgeSources over the thread, KnowledgeMessage
 * per answer, KnowledgeLink as react-markdown's `a` (one parse per message: react-markdown's) and
 * a closed KnowledgeSourcesPanel — the same messages and sanitizer as the floor.
 */
export function glueComponents({ h, Markdown, rehypeSanitize, KnowledgeSources, KnowledgeMessage, KnowledgeLink, KnowledgeSourcesPanel }) {
  const PLAIN_REHYPE = [rehypeSanitize];
  const COMPONENTS = { a: KnowledgeLink };
  function GlueTranscript({ messages, resolver }) {
    return h(
      KnowledgeSources,
      { messages, resolver },
      h(
        "div",
        null,
        messages.map((message) => {
          if (message.type === "human") return h("p", { key: message.id }, message.content);
          if (message.type !== "ai" || message.content === "") return null;
          return h(
            "article",
            { key: message.id },
            h(
              KnowledgeMessage,
              { message },
              h("div", null, h(Markdown, { rehypePlugins: PLAIN_REHYPE, components: COMPONENTS }, message.content)),
              h(KnowledgeSourcesPanel, { defaultOpen: false }),
            ),
          );
        }),
      ),
    );
  }
  return { GlueTranscript };
}

export const withAnswer = (base, text) => [...base, { type: "ai", id: "streaming", content: text }];

let variant = 0;
/**
 * New answer strings for each first render (trailing spaces: the same rendered DOM), so nothing
 * keyed by the Markdown text is warm from an earlier run; tool messages stay the same objects.
 * The spaces end the last line, before its newline: after a final newline they would be a line
 * of their own, which past the guard's indentation cap (128 columns, reached after 128 renders)
 * the guard rewrites, and every message would then be a guarded one (parsed again by each
 * `SourcesPanel`, whose citation memo is keyed by the unguarded text).
 */
export const freshAnswers = (messages) => {
  variant += 1;
  const pad = " ".repeat(variant);
  return messages.map((m) =>
    m.type === "ai" && m.content !== "" ? { ...m, content: m.content.replace(/\n?$/, (end) => pad + end) } : m,
  );
};

export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Elements, attributes and characters of text under `container` (the benches' DOM size). */
export const domSize = (container) => {
  const all = container.querySelectorAll("*");
  let attributes = 0;
  for (const element of all) attributes += element.attributes.length;
  return { elements: all.length, attributes, text: container.textContent.length };
};
