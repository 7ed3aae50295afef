import { readFileSync } from "node:fs";
import { expect, it } from "vitest";
import { findCitations, relabelOrphans } from "../src/index.js";
it("matches python", () => {
  const cases = JSON.parse(readFileSync("/tmp/diff/cit.json", "utf8")) as Array<{ markdown: string; expected: unknown; relabeled: string }>;
  let bad = 0;
  for (const c of cases) {
    const got = findCitations(c.markdown).map((x) => ({ ...x }));
    const rel = relabelOrphans(c.markdown, (c as unknown as {keep?: string[]}).keep ?? []);
    if (JSON.stringify(got) !== JSON.stringify(c.expected) || rel !== c.relabeled) {
      if (bad < 5) console.log(JSON.stringify(c.markdown), JSON.stringify(got), JSON.stringify(c.expected));
      bad++;
    }
  }
  expect(bad).toBe(0);
});
