/**
 * The browser half of the Chromium render bench: bench-render-chromium.mjs bundles this module
 * with Vite (React's production build, the package from source) and calls `dkBench.run` /
 * `dkBench.domCounts` in a headless Chromium page.
 *
 * Each first render is a fresh container and root, timed with performance.now() around a
 * synchronous render (flushSync) plus the layout it forces (document.body.offsetHeight), so the
 * time is what a user's browser pays before the transcript can be painted. Verification is warm
 * (one resolver that has seen every tool message, as in the jsdom bench's "warm" line); answer
 * strings are fresh for every render. Plain and ours alternate run by run.
 */

import { createElement as h } from "react";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
import Markdown from "react-markdown";
import rehypeSanitize from "rehype-sanitize";

import { KnowledgeMarkdown, SourcesPanel, createSourceResolver, sourceId } from "../src/index.ts";
import { buildHistory, domSize, freshAnswers, median, transcriptComponents, withAnswer } from "./bench-transcript.mjs";

const { Transcript, PlainTranscript } = transcriptComponents({ h, Markdown, rehypeSanitize, KnowledgeMarkdown, SourcesPanel });

/** The three transcripts every bench renders, by name. */
export const VARIANTS = {
  full: (props) => h(Transcript, props),
  noPanel: (props) => h(Transcript, { ...props, panel: false }),
  plain: (props) => h(PlainTranscript, props),
};

// Chromium started with --js-flags=--expose-gc has `gc`: collecting before each render keeps one
// render's garbage out of the next one's time.
const collect = () => globalThis.gc?.();

function mount(messages, resolver, variant) {
  const container = document.createElement("div");
  document.body.appendChild(container);
  // React reports a render error and renders nothing; the bench must fail instead of timing that.
  let failure = null;
  const reactRoot = createRoot(container, { onUncaughtError: (error) => (failure ??= error) });
  const start = performance.now();
  flushSync(() => reactRoot.render(VARIANTS[variant]({ messages, resolver })));
  const rendered = performance.now();
  if (failure !== null) throw failure;
  void document.body.offsetHeight; // force style and layout inside the timed span
  const end = performance.now();
  return { reactRoot, container, elapsed: end - start, layout: end - rendered };
}

function unmount({ reactRoot, container }) {
  flushSync(() => reactRoot.unmount());
  container.remove();
}

/** DOM size of each variant over a `turns`-turn history (warm verification), as the jsdom bench counts it. */
export function domCounts({ turns, sourcesPerTool }) {
  const { history, streamingBase } = buildHistory({ turns, sourcesPerTool, sourceId });
  const resolver = createSourceResolver();
  const counts = {};
  for (const variant of Object.keys(VARIANTS)) {
    const mounted = mount(withAnswer(history, streamingBase), resolver, variant);
    counts[variant] = { ...domSize(mounted.container), chips: mounted.container.querySelectorAll(".dk-chip").length };
    unmount(mounted);
  }
  return counts;
}

/**
 * First-render times (ms) of every variant, `runs` each, plain alternating with ours; `layout` is
 * the part of each median spent in the forced style and layout after React's commit.
 */
export function run({ turns, sourcesPerTool, runs }) {
  const { history, streamingBase } = buildHistory({ turns, sourcesPerTool, sourceId });
  const resolver = createSourceResolver();
  // Warm-up (not measured): verifies every tool message once and warms the JIT on every variant.
  for (let round = 0; round < 2; round++) {
    for (const variant of Object.keys(VARIANTS)) unmount(mount(freshAnswers(withAnswer(history, streamingBase)), resolver, variant));
  }
  const times = { full: [], noPanel: [], plain: [] };
  const layout = { full: [], noPanel: [], plain: [] };
  const dom = {};
  for (let index = 0; index < runs; index++) {
    for (const variant of ["plain", "full", "plain", "noPanel"]) {
      const messages = freshAnswers(withAnswer(history, streamingBase));
      collect();
      const mounted = mount(messages, resolver, variant);
      times[variant].push(mounted.elapsed);
      layout[variant].push(mounted.layout);
      if (index === 0) dom[variant] = domSize(mounted.container);
      unmount(mounted);
    }
  }
  const medianOf = (byVariant) => Object.fromEntries(Object.entries(byVariant).map(([name, values]) => [name, median(values)]));
  return { messages: history.length + 1, times, medians: medianOf(times), layout: medianOf(layout), dom, gc: typeof globalThis.gc === "function" };
}

// One mounted transcript at a time, for the CPU-time pass driven step by step from Node (see
// bench-render-chromium.mjs): prepare once, then collect, mount (+ forced layout), unmount.
let prepared = null;
let mounted = null;

/** Builds the history and verifies it once (the same warm state `run` times). */
export function prepare({ turns, sourcesPerTool }) {
  const { history, streamingBase } = buildHistory({ turns, sourcesPerTool, sourceId });
  prepared = { history, streamingBase, resolver: createSourceResolver() };
  for (const variant of Object.keys(VARIANTS)) unmountLast(mountOne(variant));
}

/** Mounts `variant` over fresh answer strings and forces style and layout; returns its wall time. */
export function mountOne(variant) {
  const messages = freshAnswers(withAnswer(prepared.history, prepared.streamingBase));
  mounted = mount(messages, prepared.resolver, variant);
  return mounted.elapsed;
}

export function unmountLast() {
  if (mounted !== null) unmount(mounted);
  mounted = null;
}

globalThis.dkBench = { collect, domCounts, mountOne, prepare, run, unmountLast };
