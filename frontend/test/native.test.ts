/**
 * Native RAGFlow snapshot reader behaviour that JSON vectors cannot express: JS-only values,
 * hostile objects, frozen copies. The snapshots are SYNTHETIC (made-up ids, locators and texts,
 * shaped like DeerFlow's `knowledge_sources` object); the shared cases are in
 * contracts/vectors/native_ragflow.json.
 */

import fc from "fast-check";
import { describe, expect, it } from "vitest";

import {
  NATIVE_TOOL_NAMES,
  nativeHandle,
  readNative,
  type NativeSource,
} from "../src/native.js";

const CALL = "0123456789abcdef0123456789abcdef";

interface RawRecord {
  readonly id: string;
  text: string;
  readonly [field: string]: unknown;
}

function record(n: number, fields: Partial<Record<keyof NativeSource, unknown>> = {}): RawRecord {
  const base: RawRecord = {
    id: `${CALL}-${n}`,
    provider: "ragflow",
    dataset_id: "5b1e7c2a6f3d11f0b1a40242ac120006",
    document_id: "a6c3d2e06f3e11f0b1a40242ac120006",
    chunk_id: `9f2c41d07be3a5e${n % 10}`,
    dataset_name: "HR Policies",
    document_name: "Employee_Handbook_2026.pdf",
    text: `Employees accrue leave (excerpt ${n}).`,
    truncated: false,
    pages: [14],
  };
  return Object.assign(base, fields);
}

const entry = (r: RawRecord, n: number) =>
  `[citation:${n}](${nativeHandle(r.id)}) HR Policies / Employee_Handbook_2026.pdf\n${r.text}`;

const snapshot = (...sources: unknown[]) => ({ knowledge_sources: { version: 1, sources } });

describe("readNative", () => {
  it("reads a snapshot and returns frozen copies without unknown fields", () => {
    const pages = [14];
    const raw: RawRecord = { ...record(1), score: 0.9, pages };
    const artifact = snapshot(raw);
    const result = readNative(entry(raw, 1), artifact, "knowledge_search");
    expect(result.error).toBeNull();
    expect(result.rejected).toEqual([]);
    const [source] = result.sources;
    expect(source).toEqual(record(1));
    expect(Object.isFrozen(source)).toBe(true);
    expect(Object.isFrozen(source?.pages)).toBe(true);
    raw.text = "changed";
    pages.push(99);
    expect(source?.text).toBe("Employees accrue leave (excerpt 1).");
    expect(source?.pages).toEqual([14]);
  });

  it("allows exactly knowledge_search and task", () => {
    expect([...NATIVE_TOOL_NAMES].sort()).toEqual(["knowledge_search", "task"]);
    const r = record(1);
    for (const name of [undefined, 1, ["task"], "Task", "knowledge_search "]) {
      expect(readNative(entry(r, 1), snapshot(r), name).error).toBe("tool_not_allowed");
    }
  });

  it("treats JS-only values as what they are not: JSON", () => {
    const r = record(1);
    for (const artifact of [undefined, () => 1, new Map([["knowledge_sources", {}]])]) {
      expect(readNative(entry(r, 1), artifact, "task")).toEqual({
        sources: [],
        rejected: [],
        error: null,
      });
    }
    const inherited = Object.create(snapshot(r)) as object;
    expect(readNative(entry(r, 1), inherited, "task").sources).toEqual([]);
    const protoVersion = { knowledge_sources: Object.create({ version: 1, sources: [r] }) };
    expect(readNative(entry(r, 1), protoVersion, "task").error).toBe("bad_version");
    expect(readNative(entry(r, 1), snapshot({ ...r, pages: [1n] }), "task").rejected).toEqual([
      { index: 0, reason: "bad_field" },
    ]);
    const boxed = snapshot({ ...r, truncated: new Boolean(false) });
    expect(readNative(entry(r, 1), boxed, "task").rejected).toEqual([
      { index: 0, reason: "bad_field" },
    ]);
  });

  it("counts name lengths in code points, not UTF-16 units", () => {
    const r = record(1, { document_name: "🦌".repeat(512) });
    expect(readNative(entry(r, 1), snapshot(r), "task").sources).toHaveLength(1);
    const over = record(1, { document_name: "🦌".repeat(513) });
    expect(readNative(entry(r, 1), snapshot(over), "task").rejected).toEqual([
      { index: 0, reason: "bad_field" },
    ]);
  });

  it("never throws on hostile objects", () => {
    const throwing = new Proxy(
      {},
      {
        get() {
          throw new Error("boom");
        },
        has() {
          throw new Error("boom");
        },
        ownKeys() {
          throw new Error("boom");
        },
        getOwnPropertyDescriptor() {
          throw new Error("boom");
        },
      },
    );
    const r = record(1);
    expect(() => readNative(entry(r, 1), throwing, "task")).not.toThrow();
    expect(readNative(entry(r, 1), throwing, "task").error).toBe("internal_error");
    expect(() => readNative(entry(r, 1), { knowledge_sources: throwing }, "task")).not.toThrow();
    expect(readNative(entry(r, 1), snapshot(throwing, r), "task")).toEqual({
      sources: [r],
      rejected: [{ index: 0, reason: "bad_field" }],
      error: null,
    });
    expect(() => readNative(throwing, snapshot(r), "task")).not.toThrow();
  });

  it("never throws and accounts for every record on arbitrary JSON", () => {
    fc.assert(
      fc.property(
        fc.jsonValue(),
        fc.array(fc.jsonValue(), { maxLength: 4 }),
        fc.jsonValue(),
        (content, records, version) => {
          const artifact = { knowledge_sources: { version, sources: records } };
          const result = readNative(content, artifact, "task");
          const counted = result.sources.length + result.rejected.length;
          expect(result.error !== null || counted === records.length).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
