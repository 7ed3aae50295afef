import { createHash } from "node:crypto";

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { sha256Hex } from "../src/sha256.js";

const reference = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");

describe("sha256Hex", () => {
  it("matches FIPS 180-4's examples", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("matches Node's crypto at every length around the block and length-field boundaries", () => {
    // 55/56 bytes: the last length that fits one block with its padding; 63/64/65: a full block.
    for (let length = 0; length <= 260; length++) {
      const text = "é".repeat(length >> 1) + "x".repeat(length & 1);
      expect(sha256Hex(text), `length ${length}`).toBe(reference(text));
    }
  });

  it("matches Node's crypto on any well-formed string", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 300 }), (text) => {
        expect(sha256Hex(text)).toBe(reference(text));
      }),
      { numRuns: 500 },
    );
  });

  it("matches Node's crypto on a long input (many blocks)", () => {
    const text = "deerflow.knowledge_source.v1\n".repeat(10_000);
    expect(sha256Hex(text)).toBe(reference(text));
  });
});
