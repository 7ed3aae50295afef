/**
 * What the chip DOM itself costs Chromium's style and layout: a ladder of static DOM variants.
 *
 * bench-render-chromium.mjs times the whole first render (React, parse, verification, style,
 * layout), where the noise of a shared 2-core machine (±30 % render to render, ±0.1 on the ratio
 * between runs) hides any change of a few per cent. This bench removes the script side: it renders
 * the bench transcript once with each component (ours: KnowledgeMarkdown + closed SourcesPanel;
 * plain react-markdown + rehype-sanitize), takes the resulting DOM as HTML, derives the variants
 * below from ours by plain string edits (`domVariants`), and then, in one Chromium process with
 * knowledge.css loaded, inserts each variant's already parsed subtree and forces layout, in rotating
 * order, timing the renderer main thread's style and layout in CPU time. Ratios are medians of
 * per-round ratios, so load that both sides of a round share cancels.
 *
 *   ours            the chat page's DOM
 *   noBadge         chips without their number (no dk-n<N> class, no data-dk-number: no ::before)
 *   noDescriptions  without the hidden short descriptions
 *   noPanel         without the closed Sources panels
 *   chipsAsLinks    each closed chip replaced by <a href="#">title</a>: the chip's cost over a link
 *   plain           plain react-markdown's DOM (the floor; its links show the model's label)
 *
 * Usage: node scripts/bench-render-dom.mjs [--runs N]
 */

import { pathToFileURL } from "node:url";

import { bundleBench, openBenchPage, threadTimes } from "./bench-render-chromium.mjs";
import { median } from "./bench-transcript.mjs";

const CHIP = /<button type="button" class="dk-citation dk-chip[^"]*"[^>]*>([^<]*)<\/button>/g;
const NUMBER_CLASS = / dk-n\d+"/g;
const NUMBER_ATTRIBUTE = / data-dk-number="\d+"/g;
const DESCRIPTION = /<span id="[^"]*" hidden="">[^<]*<\/span>/g;
const PANEL = /<section class="dk-sources"[^>]*>[\s\S]*?<\/section>/g;

/** The variants (name → HTML) of ours' HTML `ours`, plus `plain` as given. */
export function domVariants(ours, plain) {
  return {
    ours,
    noBadge: ours.replace(NUMBER_CLASS, '"').replace(NUMBER_ATTRIBUTE, ""),
    noDescriptions: ours.replace(DESCRIPTION, ""),
    noPanel: ours.replace(PANEL, ""),
    chipsAsLinks: ours.replace(CHIP, '<a href="#">$1</a>'),
    plain,
  };
}

/**
 * The bench transcript (`turns`, `sourcesPerTool`) as HTML, rendered by ours (`full`: the chat
 * page's components, SourcesPanel closed) and by plain react-markdown, in a page of openBenchPage.
 */
export function captureDom(page, options) {
  return page.evaluate((o) => {
    globalThis.dkBench.prepare(o);
    const out = {};
    for (const variant of ["full", "plain"]) {
      globalThis.dkBench.mountOne(variant);
      out[variant] = document.body.lastElementChild.innerHTML;
      globalThis.dkBench.unmountLast();
    }
    return out;
  }, options);
}

async function main() {
  const at = process.argv.indexOf("--runs");
  const runs = at < 0 ? 21 : Number(process.argv[at + 1]);
  if (!Number.isInteger(runs) || runs < 1) throw new Error("Error: --runs takes a positive whole number");
  const { browser, page } = await openBenchPage(await bundleBench());
  try {
    const html = await captureDom(page, { turns: 200, sourcesPerTool: 100 });
    const variants = domVariants(html.full, html.plain);
    const names = Object.keys(variants);
    for (const name of names.slice(1, -1)) {
      if (variants[name] === variants.ours) throw new Error(`Error: the ${name} edit changed nothing: the chip DOM changed`);
    }
    await page.evaluate((all) => (globalThis.dkDomVariants = all), variants);
    const { read, detach } = await threadTimes(page);
    const style = names.map(() => []);
    const layout = names.map(() => []);
    for (let round = 0; round < runs; round++) {
      for (let step = 0; step < names.length; step++) {
        const index = (step + round) % names.length;
        // Parsed outside the timed step: only insertion, style and layout are measured.
        await page.evaluate((name) => {
          globalThis.gc?.();
          const holder = document.createElement("div");
          holder.innerHTML = globalThis.dkDomVariants[name];
          globalThis.dkDomHolder = holder;
        }, names[index]);
        const before = await read();
        await page.evaluate(() => {
          document.body.appendChild(globalThis.dkDomHolder);
          void document.body.offsetHeight;
        });
        const after = await read();
        await page.evaluate(() => {
          globalThis.dkDomHolder.remove();
          globalThis.dkDomHolder = null;
        });
        style[index].push((after.RecalcStyleDuration - before.RecalcStyleDuration) * 1000);
        layout[index].push((after.LayoutDuration - before.LayoutDuration) * 1000);
      }
    }
    await detach();
    const both = names.map((_, k) => style[k].map((value, round) => value + layout[k][round]));
    const ratio = (values, base) => median(values.map((value, round) => value / base[round]));
    const ours = names.indexOf("ours");
    const plain = names.indexOf("plain");
    console.log(`Chromium ${browser.version()}; ${runs} rounds; style + layout of inserting each DOM (CPU time, medians)`);
    names.forEach((name, k) => {
      console.log(
        `${name.padEnd(15)} style ${median(style[k]).toFixed(1)} ms, layout ${median(layout[k]).toFixed(1)} ms; ` +
          `to ours ${ratio(both[k], both[ours]).toFixed(3)}, to plain ${ratio(both[k], both[plain]).toFixed(3)}`,
      );
    });
  } finally {
    await browser.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
