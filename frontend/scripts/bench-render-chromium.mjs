/**
 * Render benchmark in real Chromium: the first render (warm verification) of the 1,000-message
 * transcript of bench-render.mjs, ours (KnowledgeMarkdown + closed SourcesPanel; also the glue
 * under react-markdown) versus the semantic floor — react-markdown + rehype-sanitize with the same
 * accessible button per citation (same name, state and description; bench-transcript.mjs) — and
 * versus plain react-markdown + rehype-sanitize.
 *
 * jsdom pays heavily per DOM attribute, and the chip DOM has about ten times the attributes of
 * plain Markdown, so the jsdom ratio overstates what a user's browser pays; this bench measures
 * the same messages (bench-transcript.mjs) where users run them. bench-render-browser.mjs is
 * bundled with Vite's JS API in memory (React's production build, the package from source, no
 * files written), injected into an about:blank page of Debian's Chromium (/usr/bin/chromium or
 * $DEERFLOW_CHROMIUM; never a downloaded browser) driven headless by playwright-core, with the
 * package stylesheet applied as an app would load it. One browser process (PROCESSES) times
 * RUNS renders of every variant with performance.now() (render + forced layout, plain and
 * ours alternating), then CPU_RUNS more with the renderer main thread's CPU time (DevTools
 * Performance metrics in thread ticks, one render per step): on a shared machine wall time
 * includes waiting for a core, which dilutes the ratio, CPU time does not. The medians per process
 * are printed, then the median over processes of each process's ratio, the target ratio (CPU
 * time, first render / semantic floor: ≤ 1.3) last.
 *
 * Usage: node scripts/bench-render-chromium.mjs [--quick] [--no-stylesheet]   (npm run bench runs it;
 * --no-stylesheet leaves knowledge.css out, to tell the stylesheet's share of style + layout apart)
 */

import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

import { chromium } from "playwright-core";
import { build } from "vite";

export const CHROMIUM = process.env.DEERFLOW_CHROMIUM ?? "/usr/bin/chromium";
const LAUNCH_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--js-flags=--expose-gc",
];
// Paths from strings, not `new URL`: under a jsdom test environment the global URL is jsdom's.
const HERE = dirname(fileURLToPath(import.meta.url));
const ENTRY = join(HERE, "bench-render-browser.mjs");
const STYLESHEET = join(HERE, "..", "src", "components", "knowledge.css");

/** The bench page's script: bench-render-browser.mjs and everything it imports, as one IIFE. */
export async function bundleBench() {
  const result = await build({
    root: join(HERE, ".."),
    configFile: false,
    logLevel: "error",
    mode: "production",
    cacheDir: join(HERE, "..", "..", "node_modules", ".vite"),
    define: { "process.env.NODE_ENV": JSON.stringify("production") },
    // Production JSX even when run under vitest (NODE_ENV=test would pick jsxDEV, which React's
    // production build does not have).
    oxc: { jsx: { runtime: "automatic", development: false } },
    build: {
      write: false,
      target: "es2022",
      minify: true,
      lib: { entry: ENTRY, formats: ["iife"], name: "dkBenchBundle", fileName: () => "bench.js" },
    },
  });
  const outputs = (Array.isArray(result) ? result : [result]).flatMap((r) => r.output);
  const chunk = outputs.find((o) => o.type === "chunk" && o.isEntry);
  if (!chunk) throw new Error("Error: the Vite build of bench-render-browser.mjs produced no entry chunk");
  return chunk.code;
}

/** A fresh headless Chromium with one about:blank page holding the bench bundle (`window.dkBench`). */
export async function openBenchPage(script, { stylesheet = true } = {}) {
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: LAUNCH_ARGS });
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
    const errors = [];
    page.on("pageerror", (error) => errors.push(error));
    await page.setContent("<!doctype html><html><head><meta charset=utf-8></head><body></body></html>");
    if (stylesheet) await page.addStyleTag({ content: readFileSync(STYLESHEET, "utf8") });
    await page.addScriptTag({ content: script });
    if (errors.length > 0) throw errors[0];
    return { browser, page };
  } catch (error) {
    await browser.close();
    throw error;
  }
}

const CPU_METRICS = ["TaskDuration", "RecalcStyleDuration", "LayoutDuration"];
/** The variants of bench-render-browser.mjs and one timed run's order (baselines twice). */
const VARIANT_NAMES = ["full", "noPanel", "glue", "floor", "plain"];
export const RUN_ORDER = ["plain", "full", "floor", "plain", "noPanel", "floor", "glue"];

/**
 * The renderer main thread's cumulative CPU time (thread ticks, DevTools Performance domain) of
 * `page`: `read()` gives TaskDuration, RecalcStyleDuration and LayoutDuration in seconds; the
 * difference of two reads brackets what ran between them. `detach()` ends the session.
 */
export async function threadTimes(page) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable", { timeDomain: "threadTicks" });
  return {
    read: async () => {
      const { metrics } = await cdp.send("Performance.getMetrics");
      return Object.fromEntries(CPU_METRICS.map((name) => [name, metrics.find((m) => m.name === name)?.value ?? NaN]));
    },
    detach: () => cdp.detach(),
  };
}

/**
 * The renderer main thread's CPU time (thread ticks, from the DevTools Performance domain) of
 * each first render, `runs` of each variant, plain alternating with ours: one render per step
 * driven from here, so the metrics bracket exactly one mount and its forced layout. Wall time on a
 * shared machine includes waiting for a core; thread time does not.
 */
export async function cpuTimes(page, { turns, sourcesPerTool, runs }) {
  const { read, detach } = await threadTimes(page);
  await page.evaluate((options) => globalThis.dkBench.prepare(options), { turns, sourcesPerTool });
  const times = Object.fromEntries(VARIANT_NAMES.map((name) => [name, []]));
  const layout = Object.fromEntries(VARIANT_NAMES.map((name) => [name, []]));
  for (let index = 0; index < runs; index++) {
    for (const variant of RUN_ORDER) {
      await page.evaluate(() => globalThis.dkBench.collect());
      const before = await read();
      await page.evaluate((name) => globalThis.dkBench.mountOne(name), variant);
      const after = await read();
      await page.evaluate(() => globalThis.dkBench.unmountLast());
      times[variant].push((after.TaskDuration - before.TaskDuration) * 1000);
      layout[variant].push(
        (after.RecalcStyleDuration - before.RecalcStyleDuration + after.LayoutDuration - before.LayoutDuration) * 1000,
      );
    }
  }
  await detach();
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const medianOf = (byVariant) => Object.fromEntries(Object.entries(byVariant).map(([name, values]) => [name, median(values)]));
  if (!Number.isFinite(median(times.plain)) || median(times.plain) <= 0) {
    throw new Error("Error: Chromium reported no main-thread CPU time (Performance.getMetrics TaskDuration)");
  }
  // Each variant of ours against the floor render next to it in the same round (RUN_ORDER: full
  // then floor, noPanel then floor then glue): the median of per-round ratios cancels most of the
  // load both sides of a round share, on a machine other jobs keep busy.
  const paired = (variant, floorSlot) =>
    median(times[variant].map((value, round) => value / times.floor[2 * round + floorSlot]));
  const toFloor = { full: paired("full", 0), noPanel: paired("noPanel", 1), glue: paired("glue", 1) };
  return { times, medians: medianOf(times), layout: medianOf(layout), toFloor };
}

async function main() {
  const quick = process.argv.includes("--quick");
  const stylesheet = !process.argv.includes("--no-stylesheet");
  const TURNS = 200;
  const SOURCES_PER_TOOL = quick ? 20 : 100;
  const RUNS = quick ? 3 : 11;
  // One browser process, every variant in each round: the ratios compare like with like (other
  // processes, of this bench or of other jobs, bring their own caches and their own load).
  const CPU_RUNS = quick ? 2 : 15;
  const PROCESSES = 1;
  const ms = (value) => `${value.toFixed(2)} ms`;
  const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

  const script = await bundleBench();
  console.log(`bench bundle: ${(script.length / 1024).toFixed(0)} KiB; ${PROCESSES} Chromium processes × ${RUNS} runs per variant`);
  const results = [];
  let version = "";
  for (let process_ = 0; process_ < PROCESSES; process_++) {
    const { browser, page } = await openBenchPage(script, { stylesheet });
    try {
      version = browser.version();
      const result = await page.evaluate(
        (options) => globalThis.dkBench.run(options),
        { turns: TURNS, sourcesPerTool: SOURCES_PER_TOOL, runs: RUNS },
      );
      const { full, noPanel, glue, floor, plain } = result.medians;
      console.log(
        `process ${process_ + 1}: first render (warm) ${ms(full)}, without SourcesPanel ${ms(noPanel)}, glue under react-markdown ${ms(glue)}, ` +
          `semantic floor ${ms(floor)}, plain react-markdown ${ms(plain)} (medians; ratio to the floor ${(full / floor).toFixed(2)}, to plain ${(full / plain).toFixed(2)})`,
      );
      result.cpu = await cpuTimes(page, { turns: TURNS, sourcesPerTool: SOURCES_PER_TOOL, runs: CPU_RUNS });
      const cpu = result.cpu.medians;
      console.log(
        `process ${process_ + 1}, main-thread CPU time: first render (warm) ${ms(cpu.full)}, ` +
          `without SourcesPanel ${ms(cpu.noPanel)}, glue ${ms(cpu.glue)}, floor ${ms(cpu.floor)}, plain ${ms(cpu.plain)} ` +
          `(ratio to the floor ${result.cpu.toFloor.full.toFixed(2)}, median of per-round ratios)`,
      );
      results.push(result);
    } finally {
      await browser.close();
    }
  }
  const [first] = results;
  const { dom } = first;
  const of = (variant) => median(results.map((r) => r.medians[variant]));
  const ratioOf = (variant, base = "plain") => median(results.map((r) => r.medians[variant] / r.medians[base]));
  console.log(`Chromium ${version} (headless${first.gc ? ", gc before each render" : ""}${stylesheet ? ", knowledge.css loaded" : ", no stylesheet"}); messages: ${first.messages}, sources: ${TURNS * SOURCES_PER_TOOL}`);
  console.log(`first render, warm caches (median over processes): ${ms(of("full"))}`);
  console.log(`first render without SourcesPanel, warm caches: ${ms(of("noPanel"))}`);
  console.log(`glue under react-markdown (KnowledgeSources/KnowledgeMessage/KnowledgeLink/KnowledgeSourcesPanel): ${ms(of("glue"))}`);
  console.log(`semantic floor: react-markdown + rehype-sanitize, the same accessible button per citation: ${ms(of("floor"))}`);
  console.log(`baseline: plain react-markdown + rehype-sanitize: ${ms(of("plain"))}`);
  const layoutOf = (variant) => median(results.map((r) => r.layout[variant]));
  console.log(
    `of which style + layout: ${ms(layoutOf("full"))}, without SourcesPanel ${ms(layoutOf("noPanel"))}, glue ${ms(layoutOf("glue"))}, ` +
      `floor ${ms(layoutOf("floor"))}, plain ${ms(layoutOf("plain"))}`,
  );
  console.log(
    `DOM: ${dom.full.elements} elements, ${dom.full.attributes} attributes (without SourcesPanel: ${dom.noPanel.elements}, ${dom.noPanel.attributes}); ` +
      `glue: ${dom.glue.elements}, ${dom.glue.attributes}; floor: ${dom.floor.elements}, ${dom.floor.attributes}; plain: ${dom.plain.elements}, ${dom.plain.attributes}`,
  );
  const cpuOf = (variant) => median(results.map((r) => r.cpu.medians[variant]));
  const cpuLayoutOf = (variant) => median(results.map((r) => r.cpu.layout[variant]));
  const cpuRatioOf = (variant, base = "plain") => median(results.map((r) => r.cpu.medians[variant] / r.cpu.medians[base]));
  console.log(
    `main-thread CPU time (median over processes): first render (warm) ${ms(cpuOf("full"))}, without SourcesPanel ${ms(cpuOf("noPanel"))}, ` +
      `glue ${ms(cpuOf("glue"))}, floor ${ms(cpuOf("floor"))}, plain ${ms(cpuOf("plain"))}; of which style + layout ${ms(cpuLayoutOf("full"))}, ` +
      `${ms(cpuLayoutOf("noPanel"))}, ${ms(cpuLayoutOf("glue"))}, ${ms(cpuLayoutOf("floor"))}, ${ms(cpuLayoutOf("plain"))}`,
  );
  console.log(`ratio first render (warm, Chromium, wall time)/plain react-markdown: ${ratioOf("full").toFixed(2)}`);
  console.log(`ratio first render (warm, Chromium, CPU time)/plain react-markdown: ${cpuRatioOf("full").toFixed(2)}`);
  console.log(`ratio semantic floor (CPU time)/plain react-markdown: ${cpuRatioOf("floor").toFixed(2)}`);
  console.log(`ratio first render (warm, Chromium, wall time)/semantic floor: ${ratioOf("full", "floor").toFixed(2)}`);
  const pairedOf = (variant) => median(results.map((r) => r.cpu.toFloor[variant]));
  console.log(`ratio first render (warm, Chromium, CPU time)/semantic floor, of the medians: ${cpuRatioOf("full", "floor").toFixed(2)}`);
  console.log(`ratio first render without SourcesPanel (warm, Chromium, CPU time)/semantic floor: ${pairedOf("noPanel").toFixed(2)}`);
  console.log(`ratio glue under react-markdown (warm, Chromium, CPU time)/semantic floor: ${pairedOf("glue").toFixed(2)}`);
  console.log(
    `ratio first render (warm, Chromium, CPU time)/semantic floor (median of per-round ratios; target ≤ 1.3): ${pairedOf("full").toFixed(2)}`,
  );
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
