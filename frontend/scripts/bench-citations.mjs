/**
 * The citation path's two costs that grow with a chat: finding citations in Markdown, and
 * verifying the evidence they resolve to.
 *
 * findCitations (micromark → mdast → citations) on realistic answers and hostile inputs from 1 KB
 * to 10 MB.
 *
 * Each input is timed at 1 KB, 10 KB, …, 10 MB; the growth t(10n)/t(n) of each step from 100 KB
 * up (below that, fixed costs and the JIT dominate) must stay at or under 11 for linear time.
 * The baseline is one compiled regular-expression pass over the same text (every match of an
 * inline-link pattern): the least any scanner must do. Every ratio is measured in this one run;
 * timings are CPU time of this process, the fastest of a few rounds. Printed last: the worst
 * growth, then the findCitations/regex ratio on the 10 MB realistic answer.
 *
 * collectSources cold (issue 15, target ≤ 1.6×): the render benches' 1,000-message history (200
 * tool messages × 100 shared sources, bench-transcript.mjs) verified by a new resolver over new
 * message objects — every record's fields checked, its id recomputed, its handle and excerpt
 * found in the message text — versus the floor no verifier can go under: `sourceId` over new
 * copies of the same 20,000 records. Both run in the same rounds, in alternating order, each
 * after a full garbage collection and on inputs cloned before the clock starts; the ratio is of
 * the medians (CPU time), printed last (this part runs after the findCitations part).
 *
 * Usage: node scripts/bench-citations.mjs [--quick] [--only=<name part>]   (--quick stops at 1 MB;
 * --only=collectSources runs the evidence part alone)
 */

import { fileURLToPath } from "node:url";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";

import { createServer } from "vite";

import { buildHistory, median, withAnswer } from "./bench-transcript.mjs";

const quick = process.argv.includes("--quick");
const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
const SIZES = quick ? [1_000, 10_000, 100_000, 1_000_000] : [1_000, 10_000, 100_000, 1_000_000, 10_000_000];

const root = fileURLToPath(new URL("..", import.meta.url));
const server = await createServer({
  root,
  configFile: false,
  logLevel: "error",
  appType: "custom",
  cacheDir: fileURLToPath(new URL("../../node_modules/.vite", import.meta.url)),
  server: { middlewareMode: true, hmr: false, watch: null },
});
let kc;
try {
  kc = await server.ssrLoadModule("/src/index.ts");
} finally {
  await server.close();
}
const { findCitations, createSourceResolver, sourceId } = kc;

const H = "0123456789abcdef0123456789abcdef";
const LINK = `[citation:Guide](#knowledge-source-${H})`;
// Bounded repeats keep the baseline itself linear (an unbounded `[^\]\n]*` rescans the rest of
// the line from every `[`, quadratic on `![` × n).
const BASELINE = /\[[^\]\n]{0,256}\]\([^)\s]{0,256}\)/g;

const ANSWER =
  `Deer eat acorns in autumn ${LINK} and browse twigs in *winter*.\n\n` +
  `- Fawns stay hidden for weeks [citation:Notes][1].\n` +
  "- A `code span` with [not a link](#x) inside.\n\n" +
  "```\n[citation:X](#knowledge-source-" + H + ")\n```\n\n" +
  `[1]: #knowledge-source-${H}\n\n`;

const fill = (unit, n) => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);

const INPUTS = {
  "realistic answer": (n) => fill(ANSWER, n),
  "[ x n/2 then links": (n) => "[".repeat(n / 2) + LINK.repeat(Math.floor(n / 2 / LINK.length)),
  "images then links": (n) => "![x](y)".repeat(Math.floor(n / 14)) + "[x](y)".repeat(Math.floor(n / 12)),
  "nested brackets": (n) => "[".repeat(n / 60) + "a" + `](#knowledge-source-${H})`.repeat(n / 60),
  "]( x n": (n) => "](".repeat(n / 2),
  "![ x n": (n) => "![".repeat(n / 2),
  "[citation: x n": (n) => "[citation:".repeat(n / 10),
  "backtick runs": (n) => "`".repeat(n / 20) + "``x".repeat(Math.floor(n / 4)),
  "emphasis *a x n": (n) => "*a".repeat(n / 2),
  backslashes: (n) => "\\".repeat(n),
};

function cpu() {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/** The fastest of a few rounds, in CPU seconds: other processes slow a round down, never up. */
function time(fn, size) {
  const rounds = size <= 100_000 ? 5 : size <= 1_000_000 ? 2 : 1;
  const loops = Math.max(1, Math.floor(100_000 / size));
  let best = Infinity;
  for (let r = 0; r < rounds; r++) {
    const start = cpu();
    for (let i = 0; i < loops; i++) fn();
    best = Math.min(best, (cpu() - start) / loops);
  }
  return best;
}

// A full collection before each timed section, so that neither pays for the other's garbage
// (`node --expose-gc` is not needed: the flag is set here and `gc` taken from a new context).
setFlagsFromString("--expose-gc");
const collectGarbage = runInNewContext("gc");

// Many short rounds: on the shared 2-core machine one round's CPU time can vary by a third.
const COLLECT_ROUNDS = quick ? 7 : 15;

/** collectSources cold versus recomputing the same records' ids: medians in CPU ms. */
function benchCollect() {
  const { history, streamingBase } = buildHistory({ turns: 200, sourcesPerTool: 100, sourceId });
  const messages = withAnswer(history, streamingBase);
  const records = history.filter((m) => m.type === "tool").flatMap((m) => m.artifact.knowledge_sources);
  // Each returns the timed step over inputs cloned now (the clone is not timed).
  const prepare = {
    collect() {
      const fresh = structuredClone(messages);
      return () => {
        const lookup = createSourceResolver().collectSources(fresh, fresh.length);
        if (lookup.size !== records.length) throw new Error(`collectSources found ${lookup.size} sources`);
      };
    },
    floor() {
      const fresh = structuredClone(records);
      return () => {
        let sink = 0;
        for (const record of fresh) sink += sourceId(record).length;
        if (sink !== 32 * records.length) throw new Error("unexpected id length");
      };
    },
  };
  for (let i = 0; i < 2; i++) for (const step of Object.values(prepare)) step()(); // JIT warm-up
  const times = { collect: [], floor: [] };
  for (let round = 0; round < COLLECT_ROUNDS; round++) {
    for (const name of round % 2 === 0 ? ["collect", "floor"] : ["floor", "collect"]) {
      const step = prepare[name]();
      collectGarbage();
      const start = cpu();
      step();
      times[name].push((cpu() - start) * 1e3);
    }
  }
  return { messages: messages.length, records: records.length, collect: median(times.collect), floor: median(times.floor), times };
}


let worst = 0;
let regexRatio = 0;
for (const [name, make] of Object.entries(INPUTS)) {
  if (only !== undefined && !name.includes(only)) continue;
  const times = [];
  let ratio = 0;
  for (const size of SIZES) {
    const text = make(size);
    times.push(time(() => findCitations(text), size));
    if (size === SIZES[SIZES.length - 1]) {
      const base = time(() => {
        let count = 0;
        for (const _ of text.matchAll(BASELINE)) count += 1;
        return count;
      }, size);
      ratio = times[times.length - 1] / base;
      if (name === "realistic answer") regexRatio = ratio;
    }
  }
  const growth = times.slice(2).slice(1).map((t, i) => t / times[i + 2]);
  worst = Math.max(worst, ...growth);
  const cells = times.map((t) => `${(t * 1e3).toFixed(2).padStart(10)} ms`).join(" ");
  console.log(
    `${name.padEnd(20)} ${cells}   t(10n)/t(n) from 100 KB: ${growth.map((g) => g.toFixed(1)).join(", ")}   vs regex: ${ratio.toFixed(0)}x`,
  );
}
if (only === undefined || !"collectSources".includes(only)) {
  console.log(`sizes: ${SIZES.map((s) => s.toLocaleString("en")).join(", ")} characters`);
  console.log(`worst growth t(10n)/t(n), target <= 11: ${worst.toFixed(2)}`);
  console.log(`findCitations/regex pass ratio, ${quick ? "1" : "10"} MB realistic answer: ${regexRatio.toFixed(1)}`);
}

// Last, so that its 1,000-message history does not share the heap with the timings above.
if (only === undefined || "collectSources".includes(only)) {
  const result = benchCollect();
  const list = (values) => values.map((v) => v.toFixed(0)).join(", ");
  console.log(
    `collectSources cold, ${result.messages.toLocaleString("en")} messages (median of ${COLLECT_ROUNDS}): ${result.collect.toFixed(1)} ms [${list(result.times.collect)}]; ` +
      `recomputing the ${result.records.toLocaleString("en")} ids: ${result.floor.toFixed(1)} ms [${list(result.times.floor)}]`,
  );
  const paired = result.times.collect.map((t, i) => t / result.times.floor[i]).sort((a, b) => a - b);
  console.log(`per-round ratios: ${paired[0].toFixed(2)} … ${paired[paired.length - 1].toFixed(2)}, median ${median(paired).toFixed(2)}`);
  console.log(`ratio collectSources cold/id floor (target ≤ 1.6): ${(result.collect / result.floor).toFixed(2)}`);
}
