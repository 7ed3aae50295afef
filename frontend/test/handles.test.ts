/**
 * The handle grammar (src/handles.ts): the `#user-content-` form names what the plain form names,
 * and the handles the readers write classify back to their ids (that the module imports nothing
 * is checked with the import graph, in core.test.ts).
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { handleFor } from "../src/envelope.js";
import {
  CITATION_LABEL_PREFIX,
  NATIVE_HANDLE_PREFIX,
  NATIVE_LINK_PATTERN,
  SHARED_HANDLE_PREFIX,
  USER_CONTENT_PREFIX,
  classifyDestination,
  stripCitationPrefix,
} from "../src/handles.js";
import { nativeHandle } from "../src/native.js";

const RUNS = { numRuns: 300 } as const;
const hex32 = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 32, maxLength: 32 });
const ordinal = fc.integer({ min: 1, max: 999 });
/** Fragment bodies near the grammar: handles, near-handles and other text. */
const fragment = fc.oneof(
  hex32.map((id) => `knowledge-source-${id}`),
  fc.tuple(hex32, ordinal).map(([id, n]) => `knowledge-${id}-${n}`),
  fc.tuple(hex32, fc.string({ maxLength: 4 })).map(([id, tail]) => `knowledge-source-${id.slice(0, 31)}${tail}`),
  fc.tuple(hex32, fc.string({ maxLength: 4 })).map(([id, tail]) => `knowledge-${id}-0${tail}`),
  fc.string({ maxLength: 40 }),
);
const label = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ maxLength: 12 }).map((s) => CITATION_LABEL_PREFIX + s));

describe("classifyDestination", () => {
  it("names the same evidence through the user-content form", () => {
    fc.assert(
      fc.property(label, fragment, (raw, body) => {
        fc.pre(!body.startsWith(USER_CONTENT_PREFIX));
        expect(classifyDestination(raw, `#${USER_CONTENT_PREFIX}${body}`)).toEqual(classifyDestination(raw, `#${body}`));
      }),
      RUNS,
    );
  });

  it("reads back the ids of the handles the readers write", () => {
    fc.assert(
      fc.property(label, hex32, ordinal, (raw, id, n) => {
        expect(handleFor(id).startsWith(SHARED_HANDLE_PREFIX)).toBe(true);
        expect(classifyDestination(raw, handleFor(id))).toEqual({ kind: "shared", sourceId: id, reason: null });
        const native = `${id}-${n}`;
        expect(nativeHandle(native).startsWith(NATIVE_HANDLE_PREFIX)).toBe(true);
        expect(classifyDestination(raw, nativeHandle(native))).toEqual({ kind: "native", sourceId: native, reason: null });
      }),
      RUNS,
    );
  });

  it("gives an id exactly to shared and native links, and a web kind only to citation: labels", () => {
    fc.assert(
      fc.property(label, fc.oneof(fragment.map((body) => `#${body}`), fc.webUrl(), fc.string()), (raw, href) => {
        const found = classifyDestination(raw, href);
        if (found === null) return;
        expect(found.sourceId !== null).toBe(found.kind === "shared" || found.kind === "native");
        expect(found.reason !== null).toBe(found.kind === "malformed");
        if (found.kind === "web" || found.reason === "unsupported_destination") {
          expect(raw.startsWith(CITATION_LABEL_PREFIX)).toBe(true);
        }
      }),
      RUNS,
    );
  });

  it("keeps ordinary links ordinary and a near-handle malformed", () => {
    expect(classifyDestination("see", "https://example.com")).toBeNull();
    expect(classifyDestination("citation:see", "https://example.com")).toEqual({ kind: "web", sourceId: null, reason: null });
    expect(classifyDestination("x", `${SHARED_HANDLE_PREFIX}${"a".repeat(31)}`)).toEqual({
      kind: "malformed",
      sourceId: null,
      reason: "bad_source_id",
    });
    expect(classifyDestination("x", `#knowledge-${"a".repeat(32)}-1000`)).toBeNull();
  });
});

describe("NATIVE_LINK_PATTERN", () => {
  it("finds each native link once, in both forms, and is not left mid-text between uses", () => {
    const id = "0123456789abcdef0123456789abcdef";
    const text = `[a](#knowledge-${id}-1) [b](#${USER_CONTENT_PREFIX}knowledge-${id}-12) [c](#knowledge-${id}-01)`;
    for (let use = 0; use < 2; use++) {
      expect([...text.matchAll(NATIVE_LINK_PATTERN)].map((match) => match[1])).toEqual([`${id}-1`, `${id}-12`]);
    }
    expect(NATIVE_LINK_PATTERN.lastIndex).toBe(0);
  });
});

it("strips only a leading citation: prefix", () => {
  expect(stripCitationPrefix("citation:Deer")).toBe("Deer");
  expect(stripCitationPrefix("Deer citation:")).toBe("Deer citation:");
  expect(stripCitationPrefix("citation:citation:x")).toBe("citation:x");
});
