// @vitest-environment jsdom
/**
 * The Chromium render bench cannot silently break: its entry (scripts/bench-render-browser.mjs)
 * must bundle with Vite, load in Debian's Chromium and render the same DOM as jsdom does from the
 * same shared transcript (scripts/bench-transcript.mjs) — counts only, never times.
 */

import { existsSync } from "node:fs";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { RUN_ORDER as BROWSER_RUN_ORDER, chipSemantics, domCounts } from "../scripts/bench-render-browser.mjs";
import { CHROMIUM, RUN_ORDER, bundleBench, cpuTimes, openBenchPage } from "../scripts/bench-render-chromium.mjs";
import { captureDom, domVariants } from "../scripts/bench-render-dom.mjs";

type Opened = Awaited<ReturnType<typeof openBenchPage>>;

const SMALL = { turns: 3, sourcesPerTool: 5 };

describe("the Chromium render bench", () => {
  let opened: Opened | undefined;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`no chromium at ${CHROMIUM}: apt-get install chromium`);
    opened = await openBenchPage(await bundleBench());
  }, 120_000);

  afterAll(async () => {
    await opened?.browser.close();
  });

  it("renders the same DOM in Chromium as under jsdom, for every variant", async () => {
    const inJsdom = domCounts(SMALL);
    const inChromium = await opened!.page.evaluate(
      (options) => (globalThis as unknown as { dkBench: { domCounts: typeof domCounts } }).dkBench.domCounts(options),
      SMALL,
    );
    expect(inChromium).toEqual(inJsdom);
    // Not trivially equal: 3 answers with 5 chips each, the streaming answer with 1, and the
    // chip DOM is larger than plain Markdown's.
    expect(inJsdom.full.chips).toBe(16);
    expect(inJsdom.noPanel.chips).toBe(16);
    expect(inJsdom.plain.chips).toBe(0);
    expect(inJsdom.full.elements).toBeGreaterThan(inJsdom.noPanel.elements);
    expect(inJsdom.noPanel.elements).toBeGreaterThan(inJsdom.plain.elements);
    expect(inJsdom.glue.chips).toBe(16);
    expect(inJsdom.floor.chips).toBe(0); // the floor's buttons carry no package class
  });

  it("gives the semantic floor exactly the chips' names, states and descriptions", () => {
    const semantics = chipSemantics(SMALL);
    expect(semantics.full).toHaveLength(16);
    expect(new Set(semantics.full.map(([name]) => name)).size).toBeGreaterThan(5);
    for (const [name, expanded, description] of semantics.full) {
      expect(name).toMatch(/^Source \d+: Handbook \d+, section \d+$/);
      expect(expanded).toBe("false");
      expect(description).toMatch(/^lightrag/);
    }
    expect(semantics.floor).toEqual(semantics.full);
    expect(semantics.glue).toEqual(semantics.full);
  });

  it("runs the timed loop: every variant measured, both baselines twice per run", async () => {
    const result = await opened!.page.evaluate(
      (options) => (globalThis as unknown as { dkBench: { run: (o: typeof options) => unknown } }).dkBench.run(options),
      { ...SMALL, runs: 2 },
    );
    const { messages, times, dom, gc } = result as import("../scripts/bench-render-browser.mjs").BenchRun;
    expect(messages).toBe(SMALL.turns * 5);
    expect(times.full).toHaveLength(2);
    expect(times.noPanel).toHaveLength(2);
    expect(times.glue).toHaveLength(2);
    expect(times.floor).toHaveLength(4);
    expect(times.plain).toHaveLength(4);
    expect(gc).toBe(true);
    const counts = domCounts(SMALL);
    for (const variant of ["full", "noPanel", "glue", "floor", "plain"] as const) {
      const { chips: _chips, ...size } = counts[variant];
      expect(dom[variant]).toEqual(size);
    }
  }, 60_000);

  it("measures main-thread CPU time render by render: every variant, both baselines twice per run", async () => {
    const cpu = await cpuTimes(opened!.page, { ...SMALL, runs: 2 });
    expect(RUN_ORDER).toEqual(BROWSER_RUN_ORDER);
    expect(cpu.times.full).toHaveLength(2);
    expect(cpu.times.noPanel).toHaveLength(2);
    expect(cpu.times.glue).toHaveLength(2);
    expect(cpu.times.floor).toHaveLength(4);
    expect(cpu.times.plain).toHaveLength(4);
    for (const values of Object.values(cpu.times)) for (const value of values) expect(value).toBeGreaterThan(0);
    for (const ratio of Object.values(cpu.toFloor)) expect(ratio).toBeGreaterThan(0);
    // A render is a task; its style + layout is part of it.
    for (const variant of ["full", "noPanel", "glue", "floor", "plain"] as const) {
      expect(cpu.layout[variant]).toBeLessThanOrEqual(cpu.medians[variant] + 1e-6);
    }
  }, 60_000);

  it("derives each DOM variant of bench-render-dom.mjs by removing exactly what it names", async () => {
    const html = await captureDom(opened!.page, SMALL);
    const variants = domVariants(html.full, html.plain);
    const count = (text: string, pattern: RegExp): number => text.match(pattern)?.length ?? 0;
    const chips = count(variants.ours, /class="dk-citation dk-chip/g);
    expect(chips).toBe(16);
    expect(count(variants.ours, / dk-n\d+"/g)).toBe(chips);
    expect(count(variants.noBadge, / dk-n\d+"|data-dk-number/g)).toBe(0);
    expect(count(variants.noBadge, /class="dk-citation dk-chip/g)).toBe(chips);
    expect(count(variants.ours, /hidden=""/g)).toBeGreaterThan(0);
    expect(count(variants.noDescriptions, /hidden=""/g)).toBe(0);
    expect(count(variants.ours, /<section class="dk-sources"/g)).toBe(SMALL.turns + 1);
    expect(count(variants.noPanel, /dk-sources/g)).toBe(0);
    expect(count(variants.chipsAsLinks, /dk-chip/g)).toBe(0);
    expect(count(variants.chipsAsLinks, /<a href="#">Handbook \d+, section \d+<\/a>/g)).toBe(chips);
    expect(variants.plain).toBe(html.plain);
  });
});

