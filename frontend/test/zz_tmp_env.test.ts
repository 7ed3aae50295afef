import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { readEnvelope } from "../src/index.js";
it("matches python", () => {
  const cases = JSON.parse(readFileSync("/tmp/diff/env.json", "utf8")) as Array<{ content: unknown; artifact: unknown; expected: unknown }>;
  let bad = 0;
  for (const c of cases) {
    const r = readEnvelope(c.content, c.artifact);
    const got = { sources: r.sources.map((s) => s.id), rejected: r.rejected.map((x) => ({ ...x })), error: r.error };
    if (JSON.stringify(got) !== JSON.stringify(c.expected)) {
      if (bad < 5) console.log(JSON.stringify(c.artifact).slice(0, 400), JSON.stringify(got), JSON.stringify(c.expected));
      bad++;
    }
  }
  expect(bad).toBe(0);
});
