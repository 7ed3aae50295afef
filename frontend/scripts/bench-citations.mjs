/**
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
 * Usage: node scripts/bench-citations.mjs [--quick] [--only=<name part>]   (--quick stops at 1 MB)
 */

import { fileURLToPath } from "node:url";

import { createServer } from "vite";

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
  kc = await server.ssrLoadModule("/src/citations.ts");
} finally {
  await server.close();
}
const { findCitations } = kc;

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
console.log(`sizes: ${SIZES.map((s) => s.toLocaleString("en")).join(", ")} characters`);
console.log(`worst growth t(10n)/t(n), target <= 11: ${worst.toFixed(2)}`);
console.log(`findCitations/regex pass ratio, ${quick ? "1" : "10"} MB realistic answer: ${regexRatio.toFixed(1)}`);
