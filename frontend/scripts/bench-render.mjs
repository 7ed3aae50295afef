/**
 * Render benchmark: first render versus re-render after one streamed token.
 *
 * A 1,000-message history (200 turns of human, AI tool call, tool, AI answer, human; the last
 * message is the streaming answer) with 200 tool messages × 100 valid shared sources each, rendered
 * as a transcript of KnowledgeMarkdown + SourcesPanel (closed, as the chat page shows it) under
 * jsdom with React's production build.
 *
 *   first render (cold)  a new root, new message objects, a new resolver: includes verifying all
 *                        20,000 records (id recomputation, handle and excerpt checks)
 *   first render (warm)  a new root over already-verified message objects (parsing + DOM only)
 *   re-render            the same root after one token is appended to the last message (a new
 *                        messages array and a new last message object; everything else the same)
 *
 *   baseline             the same transcript through plain react-markdown + rehype-sanitize (no
 *                        citations resolved, no sources panel): the floor a Markdown chat pays
 *
 * Times are CPU time of this process (process.cpuUsage: user + system), not wall time, so that
 * other load on a shared machine does not skew them. Each ratio is printed last on its line, measured in this run. Targets (issue 15): first render
 * ≤ 1.3× the baseline, DOM elements ≤ 1.5×, re-render ≤ 0.01× first render (collectSources cold
 * versus the id floor: bench-citations.mjs). The DOM count is taken before any interaction (no
 * preview opened).
 * The same transcript in real Chromium (where attributes cost far less than under jsdom):
 * bench-render-chromium.mjs; both take it from bench-transcript.mjs.
 * Usage: npm run bench [-- --quick]
 */

process.env.NODE_ENV = "production";

import { fileURLToPath } from "node:url";

import { JSDOM } from "jsdom";
import { createServer } from "vite";

import { buildHistory, domSize, freshAnswers, median, transcriptComponents, withAnswer } from "./bench-transcript.mjs";

const quick = process.argv.includes("--quick");
const TURNS = 200;
const SOURCES_PER_TOOL = quick ? 20 : 100;
const FIRST_RUNS = quick ? 2 : 3;
const TOKENS = quick ? 20 : 60;

// A DOM for react-dom (installed before React is imported).
const dom = new JSDOM("<!doctype html><html><body><div id=root></div></body></html>", {
  pretendToBeVisual: true,
});
for (const key of Object.getOwnPropertyNames(dom.window)) {
  if (!(key in globalThis)) {
    try {
      globalThis[key] = dom.window[key];
    } catch {
      // read-only globals (e.g. `crypto`) stay Node's
    }
  }
}
globalThis.window = dom.window;
globalThis.document = dom.window.document;

const { createElement: h } = await import("react");
const { createRoot } = await import("react-dom/client");
const { flushSync } = await import("react-dom");
const { default: Markdown } = await import("react-markdown");
const { default: rehypeSanitize } = await import("rehype-sanitize");

// Load the package from source through Vite (TypeScript and TSX), React stays external.
const root = fileURLToPath(new URL("..", import.meta.url));
const server = await createServer({
  root,
  configFile: false,
  logLevel: "error",
  appType: "custom",
  cacheDir: fileURLToPath(new URL("../../node_modules/.vite", import.meta.url)),
  server: { middlewareMode: true, hmr: false, watch: null },
  esbuild: { jsx: "automatic" },
  oxc: { jsx: { runtime: "automatic" } },
});
let kc;
try {
  kc = await server.ssrLoadModule("/src/index.ts");
} finally {
  await server.close();
}
const { KnowledgeMarkdown, SourcesPanel, createSourceResolver, sourceId } = kc;

// ------------------------------------------------------------------------------------------------
// The history (shared with the Chromium bench, bench-render-chromium.mjs).

console.log(`building ${TURNS} tool messages × ${SOURCES_PER_TOOL} sources …`);
const { history, streamingBase } = buildHistory({ turns: TURNS, sourcesPerTool: SOURCES_PER_TOOL, sourceId });
const { Transcript, PlainTranscript } = transcriptComponents({ h, Markdown, rehypeSanitize, KnowledgeMarkdown, SourcesPanel });

const ms = (value) => `${value.toFixed(2)} ms`;
// CPU time of this process (user + system), in ms: on a shared machine, wall time includes
// waiting for a core, CPU time does not, so ratios of CPU times are far steadier.
const cpuNow = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

function mount(messages, resolver, element = (props) => h(Transcript, props)) {
  const container = document.createElement("div");
  document.body.appendChild(container);
  const reactRoot = createRoot(container);
  const start = cpuNow();
  flushSync(() => reactRoot.render(element({ messages, resolver })));
  return { reactRoot, container, elapsed: cpuNow() - start };
}

function unmount({ reactRoot, container }) {
  flushSync(() => reactRoot.unmount());
  container.remove();
}

// Warm up the JIT on a small transcript (not measured).
{
  const small = withAnswer(structuredClone(history.slice(0, 50)), streamingBase);
  unmount(mount(small, createSourceResolver()));
}

// First render, cold: fresh message objects and a fresh resolver each run.
const cold = [];
for (let run = 0; run < FIRST_RUNS; run++) {
  const messages = freshAnswers(withAnswer(structuredClone(history), streamingBase));
  const mounted = mount(messages, createSourceResolver());
  cold.push(mounted.elapsed);
  unmount(mounted);
}

// First render, warm (verified message objects, a new root), with and without the sources
// panel, and the floor (plain react-markdown + rehype-sanitize), interleaved run by run so that
// all three see the same machine load. The DOM is counted before any interaction.
const resolver = createSourceResolver();
const base = structuredClone(history);
const full = (p) => h(Transcript, p);
const noPanel = (p) => h(Transcript, { ...p, panel: false });
const plainOf = (p) => h(PlainTranscript, p);
for (const element of [full, noPanel, plainOf]) unmount(mount(withAnswer(base, streamingBase), resolver, element));
const warm = [];
const warmNoPanel = [];
const plain = [];
let domFull;
let domNoPanel;
let domPlain;
let previewsMounted;
for (let run = 0; run < FIRST_RUNS + 2; run++) {
  for (const [element, times] of [[full, warm], [noPanel, warmNoPanel], [plainOf, plain]]) {
    const mounted = mount(freshAnswers(withAnswer(base, streamingBase)), resolver, element);
    times.push(mounted.elapsed);
    const size = domSize(mounted.container);
    if (element === full) {
      domFull = size;
      previewsMounted = mounted.container.querySelectorAll(".dk-preview, .dk-excerpt").length;
    } else if (element === noPanel) {
      domNoPanel = size;
    } else {
      domPlain = size;
    }
    unmount(mounted);
  }
}

// Re-render after one streamed token.
let text = streamingBase;
const mounted = mount(withAnswer(base, text), resolver);
const tokens = [];
for (let token = 0; token < TOKENS; token++) {
  text += ` token${token}`;
  const messages = withAnswer(base, text);
  const start = cpuNow();
  flushSync(() => mounted.reactRoot.render(h(Transcript, { messages, resolver })));
  tokens.push(cpuNow() - start);
}
const chips = mounted.container.querySelectorAll(".dk-chip").length;
unmount(mounted);

const stats = resolver.stats;
const firstCold = median(cold);
const firstWarm = median(warm);
const rerender = median(tokens);
console.log(`messages: ${history.length + 1}, tool messages: ${TURNS}, sources: ${TURNS * SOURCES_PER_TOOL}, chips rendered: ${chips}`);
console.log(`resolver: ${stats.validations} validations, ${stats.indexBuilds} index builds, ${stats.historyScans} history scans`);
console.log(`first render, cold (median of ${FIRST_RUNS}): ${ms(firstCold)}  [${cold.map((v) => v.toFixed(0)).join(", ")}]`);
console.log(`first render, warm caches (median of ${FIRST_RUNS + 2}): ${ms(firstWarm)}`);
console.log(`re-render after one token (median of ${TOKENS}): ${ms(rerender)}  [p90 ${ms([...tokens].sort((a, b) => a - b)[Math.floor(TOKENS * 0.9)])}]`);
const firstPlain = median(plain);
const firstNoPanel = median(warmNoPanel);
const ratio = (a, b) => (a / b).toFixed(a / b < 0.1 ? 4 : 2);
console.log(`baseline: plain react-markdown + rehype-sanitize (median of ${FIRST_RUNS + 2}): ${ms(firstPlain)}`);
console.log(`first render without SourcesPanel, warm caches: ${ms(firstNoPanel)}`);
console.log(`DOM before any interaction: ${domFull.elements} elements, ${domFull.attributes} attributes, ${domFull.text} characters of text (without SourcesPanel: ${domNoPanel.elements}, ${domNoPanel.attributes}, ${domNoPanel.text}); plain: ${domPlain.elements}, ${domPlain.attributes}, ${domPlain.text}`);
console.log(`previews / excerpts mounted before any interaction: ${previewsMounted}`);
console.log(`ratio re-render/first render (warm caches): ${ratio(rerender, firstWarm)}`);
console.log(`ratio DOM elements/plain react-markdown (target ≤ 1.5): ${ratio(domFull.elements, domPlain.elements)}`);
console.log(`ratio DOM elements without SourcesPanel/plain react-markdown: ${ratio(domNoPanel.elements, domPlain.elements)}`);
console.log(`ratio first render without SourcesPanel (warm)/plain react-markdown: ${ratio(firstNoPanel, firstPlain)}`);
console.log(`ratio first render (cold)/plain react-markdown: ${ratio(firstCold, firstPlain)}`);
console.log(`ratio first render (warm)/plain react-markdown (target ≤ 1.3): ${ratio(firstWarm, firstPlain)}`);
console.log(`ratio re-render/first render (target ≤ 0.01): ${ratio(rerender, firstCold)}`);
