import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { readableExcerpt } from "../../src/components/readable.js";

const show = (excerpt: string): string => readableExcerpt(excerpt)(0, excerpt.length);

describe("readableExcerpt", () => {
  it("joins soft line breaks and keeps paragraph breaks", () => {
    const excerpt = "The key is sent in the\n`X-API-Key` header and is never\nprinted.\n\nNext paragraph.";
    expect(show(excerpt)).toBe("The key is sent in the X-API-Key header and is never printed.\n\nNext paragraph.");
  });

  it("hides heading markers and keeps a heading on its own line", () => {
    expect(show("## Troubleshooting\nHTTP 404 means a wrong URL.")).toBe("Troubleshooting\nHTTP 404 means a wrong URL.");
  });

  it("keeps a code block's lines and list items as they are, without the fence lines", () => {
    const excerpt = "Run:\n\n```\nexport A=1\nsearch `x`\n```\n\n- one\n- two";
    expect(show(excerpt)).toBe("Run:\n\nexport A=1\nsearch `x`\n\n- one\n- two");
  });

  it("shows hostile-looking text as text, unchanged", () => {
    const excerpt = "Script tag: <script>alert(1)</script>\n\n[x](javascript:alert(1))";
    expect(show(excerpt)).toBe(excerpt);
  });

  it("maps every character, so a highlight covers exactly the quoted characters", () => {
    const excerpt = "A **bold** claim that wraps\nacross `two` lines.";
    const shown = readableExcerpt(excerpt);
    const start = excerpt.indexOf("claim");
    const end = excerpt.indexOf("lines") + "lines".length;
    expect(shown(start, end)).toBe("claim that wraps across two lines");
    expect(shown(0, start) + shown(start, end) + shown(end, excerpt.length)).toBe(show(excerpt));
  });

  it("splits anywhere into slices that join up to the whole (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: fc.constantFrom("a", " ", "\n", "#", "`", "*", "-", "~", "|") }),
        fc.nat(),
        fc.nat(),
        (excerpt, a, b) => {
          const shown = readableExcerpt(excerpt);
          const [x, y] = [a % (excerpt.length + 1), b % (excerpt.length + 1)].sort((p, q) => p - q) as [number, number];
          expect(shown(0, x) + shown(x, y) + shown(y, excerpt.length)).toBe(shown(0, excerpt.length));
          expect(shown(0, excerpt.length).length).toBeLessThanOrEqual(excerpt.length);
        },
      ),
    );
  });

  it("costs linear time on pathological input", () => {
    const excerpt = "```\n#\n".repeat(150_000) + "`".repeat(100_000);
    expect(show(excerpt).length).toBeLessThanOrEqual(excerpt.length);
  });
});
