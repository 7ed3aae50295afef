/**
 * Stylesheet A/B for the Chromium render bench: is a CSS change to knowledge.css worth it?
 *
 * On a shared machine two runs of bench-render-chromium.mjs differ by more than most stylesheet
 * changes save (a 2-core box with other jobs: ±15 % between runs). This bench compares inside one
 * Chromium process instead: the first render of one variant (without SourcesPanel by default)
 * with knowledge.css alone and with knowledge.css plus each extra rule set given on the command
 * line, one after the other in rotating order, plus plain react-markdown as the floor. The extra
 * rules are applied as a later <style> (so they override), switched on only for their own render.
 * Each render is timed in the renderer main thread's CPU time (as bench-render-chromium.mjs does);
 * the result is the median of the per-round ratios to knowledge.css alone, which cancels most of
 * the load that both sides of a round share.
 *
 * With --replace, each rule set replaces knowledge.css for its render instead (to compare whole
 * sheets: `--replace "$(cat old.css)"`).
 *
 * Usage: node scripts/bench-render-css.mjs [--runs N] [--variant noPanel|full|glue] [--replace] 'CSS' ['CSS' ...]
 * e.g.   node scripts/bench-render-css.mjs '.dk-chip{appearance:none}' '.dk-chip-split{display:inline-block}'
 */

import { pathToFileURL } from "node:url";

import { bundleBench, openBenchPage, threadTimes } from "./bench-render-chromium.mjs";
import { median } from "./bench-transcript.mjs";

function parseArgs(argv) {
  const options = { runs: 9, variant: "noPanel", sheets: [], replace: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--runs") options.runs = Number(argv[++i]);
    else if (arg === "--variant") options.variant = argv[++i];
    else if (arg === "--replace") options.replace = true;
    else options.sheets.push(arg);
  }
  if (!Number.isInteger(options.runs) || options.runs < 1) throw new Error("Error: --runs takes a positive whole number");
  if (!["noPanel", "full", "glue"].includes(options.variant)) throw new Error("Error: --variant is noPanel, full or glue");
  if (options.sheets.length === 0) throw new Error("Error: give at least one CSS rule set to compare with knowledge.css alone");
  return options;
}

async function main() {
  const { runs, variant, sheets, replace } = parseArgs(process.argv.slice(2));
  // Arm 0: knowledge.css alone; arm 1..n: plus sheets[k - 1]; last arm: plain react-markdown.
  const arms = [{ css: null, variant }, ...sheets.map((css) => ({ css, variant })), { css: null, variant: "plain" }];
  const { browser, page } = await openBenchPage(await bundleBench());
  try {
    await page.evaluate((list) => {
      globalThis.dkBaseSheet = document.head.querySelector("style");
      globalThis.dkExtraSheets = list.map((css) => {
        const style = document.createElement("style");
        style.textContent = css;
        document.head.appendChild(style);
        style.disabled = true;
        return style;
      });
    }, sheets);
    const { read, detach } = await threadTimes(page);
    const useSheet = (index) =>
      page.evaluate(([on, instead]) => {
        globalThis.dkExtraSheets.forEach((style, k) => (style.disabled = k !== on));
        if (instead) globalThis.dkBaseSheet.disabled = on >= 0;
        void document.body.offsetHeight; // the switch's own style recalc stays outside the timed render
      }, [index, replace]);
    await page.evaluate((o) => globalThis.dkBench.prepare(o), { turns: 200, sourcesPerTool: 100 });
    const task = arms.map(() => []);
    const styleLayout = arms.map(() => []);
    for (let round = 0; round < runs; round++) {
      for (let step = 0; step < arms.length; step++) {
        const arm = (step + round) % arms.length; // rotating order: no arm always runs first
        await useSheet(arms[arm].css === null ? -1 : arm - 1);
        await page.evaluate(() => globalThis.dkBench.collect());
        const before = await read();
        await page.evaluate((name) => globalThis.dkBench.mountOne(name), arms[arm].variant);
        const after = await read();
        await page.evaluate(() => globalThis.dkBench.unmountLast());
        task[arm].push((after.TaskDuration - before.TaskDuration) * 1000);
        styleLayout[arm].push(
          (after.RecalcStyleDuration - before.RecalcStyleDuration + after.LayoutDuration - before.LayoutDuration) * 1000,
        );
      }
    }
    await detach();
    console.log(`Chromium ${browser.version()}; ${runs} rounds; variant ${variant}; main-thread CPU time, medians`);
    const ratio = (values, base) => median(values.map((value, round) => value / base[round]));
    arms.forEach((arm, index) => {
      const name =
        arm.variant === "plain" ? "plain react-markdown" : arm.css === null ? "knowledge.css" : `${replace ? "instead:" : "+"} ${arm.css.slice(0, 80)}`;
      console.log(
        `${task[index].length ? median(task[index]).toFixed(1) : "-"} ms (style + layout ${median(styleLayout[index]).toFixed(1)} ms), ` +
          `ratio to knowledge.css ${ratio(task[index], task[0]).toFixed(3)} (style + layout ${ratio(styleLayout[index], styleLayout[0]).toFixed(3)}), ` +
          `to plain ${ratio(task[index], task[arms.length - 1]).toFixed(3)}: ${name}`,
      );
    });
  } finally {
    await browser.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
