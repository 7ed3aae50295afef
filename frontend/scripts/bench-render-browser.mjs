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

import { Fragment, createElement as h, useId } from "react";
import { flushSync } from "react-dom";
import { createRoot } from "react-dom/client";
import Markdown from "react-markdown";
import rehypeSanitize from "rehype-sanitize";

import {
  DEFAULT_LABELS,
  KnowledgeLink,
  KnowledgeMarkdown,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  SourcesPanel,
  createSourceResolver,
  describeSource,
  sourceId,
} from "../src/index.ts";
import { shortDescription } from "../src/components/description.ts";
import {
  buildHistory,
  domSize,
  floorComponents,
  freshAnswers,
  glueComponents,
  median,
  semanticOracle,
  transcriptComponents,
  withAnswer,
} from "./bench-transcript.mjs";

const { Transcript, PlainTranscript } = transcriptComponents({ h, Markdown, rehypeSanitize, KnowledgeMarkdown, SourcesPanel });
const { FloorTranscript } = floorComponents({ h, Fragment, useId, Markdown, rehypeSanitize });
const { GlueTranscript } = glueComponents({
  h,
  Markdown,
  rehypeSanitize,
  KnowledgeSources,
  KnowledgeMessage,
  KnowledgeLink,
  KnowledgeSourcesPanel,
});

/** The transcripts every bench renders, by name (`floor`: the semantic floor, see bench-transcript.mjs). */
export const VARIANTS = {
  full: (props) => h(Transcript, props),
  noPanel: (props) => h(Transcript, { ...props, panel: false }),
  glue: (props) => h(GlueTranscript, props),
  floor: (props) => h(FloorTranscript, props),
  plain: (props) => h(PlainTranscript, props),
};

/** The order of one timed run: the two baselines twice, every variant of ours once. */
export const RUN_ORDER = ["plain", "full", "floor", "plain", "noPanel", "floor", "glue"];

// The chips' own names and descriptions, for the floor (computed outside any timed render).
const describeRecord = (record) => {
  const display = describeSource({ kind: "shared", id: record.id, record });
  return { title: display.title ?? DEFAULT_LABELS.untitled, description: shortDescription(display, DEFAULT_LABELS) };
};

// Chromium started with --js-flags=--expose-gc has `gc`: collecting before each render keeps one
// render's garbage out of the next one's time.
const collect = () => globalThis.gc?.();

function mount(messages, resolver, variant, oracle) {
  const container = document.createElement("div");
  document.body.appendChild(container);
  // React reports a render error and renders nothing; the bench must fail instead of timing that.
  let failure = null;
  const reactRoot = createRoot(container, { onUncaughtError: (error) => (failure ??= error) });
  const start = performance.now();
  flushSync(() => reactRoot.render(VARIANTS[variant]({ messages, resolver, oracle })));
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
  const oracle = semanticOracle(history, describeRecord);
  const counts = {};
  for (const variant of Object.keys(VARIANTS)) {
    const mounted = mount(withAnswer(history, streamingBase), resolver, variant, oracle);
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
  const oracle = semanticOracle(history, describeRecord);
  // Warm-up (not measured): verifies every tool message once and warms the JIT on every variant.
  for (let round = 0; round < 2; round++) {
    for (const variant of Object.keys(VARIANTS)) unmount(mount(freshAnswers(withAnswer(history, streamingBase)), resolver, variant, oracle));
  }
  const times = Object.fromEntries(Object.keys(VARIANTS).map((name) => [name, []]));
  const layout = Object.fromEntries(Object.keys(VARIANTS).map((name) => [name, []]));
  const dom = {};
  for (let index = 0; index < runs; index++) {
    for (const variant of RUN_ORDER) {
      const messages = freshAnswers(withAnswer(history, streamingBase));
      collect();
      const mounted = mount(messages, resolver, variant, oracle);
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
  prepared = { history, streamingBase, resolver: createSourceResolver(), oracle: semanticOracle(history, describeRecord) };
  for (const variant of Object.keys(VARIANTS)) unmountLast(mountOne(variant));
}

/** Mounts `variant` over fresh answer strings and forces style and layout; returns its wall time. */
export function mountOne(variant) {
  const messages = freshAnswers(withAnswer(prepared.history, prepared.streamingBase));
  mounted = mount(messages, prepared.resolver, variant, prepared.oracle);
  return mounted.elapsed;
}

export function unmountLast() {
  if (mounted !== null) unmount(mounted);
  mounted = null;
}

/**
 * What assistive technology gets from each citation button of each variant, in document order:
 * its name, state and description text (the floor must match ours exactly).
 */
export function chipSemantics({ turns, sourcesPerTool }) {
  const { history, streamingBase } = buildHistory({ turns, sourcesPerTool, sourceId });
  const resolver = createSourceResolver();
  const oracle = semanticOracle(history, describeRecord);
  const out = {};
  for (const variant of ["full", "glue", "floor"]) {
    const mounted = mount(withAnswer(history, streamingBase), resolver, variant, oracle);
    out[variant] = [...mounted.container.querySelectorAll("button[aria-describedby]")].map((button) => [
      button.getAttribute("aria-label"),
      button.getAttribute("aria-expanded"),
      document.getElementById(button.getAttribute("aria-describedby"))?.textContent ?? null,
    ]);
    unmount(mounted);
  }
  return out;
}

globalThis.dkBench = { chipSemantics, collect, domCounts, mountOne, prepare, run, unmountLast };
