/**
 * The shared vectors (contracts/vectors/*.json, contracts/README.md §5–6): every file must have a
 * runner here, and every case must match exactly (ids, order, reason codes, code-point offsets).
 *
 * To cover a new vector file, add a runner to RUNNERS keyed by the file's `file` field.
 */

import { readFileSync, readdirSync } from "node:fs";
import { fileURLToPath } from "node:url";

import Ajv2020 from "ajv/dist/2020.js";
import { describe, expect, it } from "vitest";

import { findCitations, readEnvelope, relabelOrphans, sourceId } from "../src/index.js";
import { readNative } from "../src/native.js";
import { readSavedEvidence } from "../src/savedEvidence.js";
import { visibleText } from "../src/visible.js";

const CONTRACTS = fileURLToPath(new URL("../../contracts/", import.meta.url));
const VECTORS = `${CONTRACTS}vectors/`;

interface VectorCase {
  readonly id: string;
  readonly description?: string;
  readonly [field: string]: unknown;
}

interface VectorFile {
  readonly file: string;
  readonly description?: string;
  readonly cases: readonly VectorCase[];
}

type Runner = (file: VectorFile) => void;

function loadJson(path: string): unknown {
  return JSON.parse(readFileSync(path, "utf8")) as unknown;
}

const vectorFiles: ReadonlyArray<readonly [string, VectorFile]> = readdirSync(VECTORS)
  .filter((name) => name.endsWith(".json"))
  .sort()
  .map((name) => [name, loadJson(VECTORS + name) as VectorFile] as const);

function eachCase(file: VectorFile, check: (vector: VectorCase) => void): void {
  for (const vector of file.cases) {
    it(vector.id, () => check(vector));
  }
}

function validateArtifact(): (artifact: unknown) => boolean {
  const ajv = new Ajv2020({ strict: false, allErrors: false });
  const validate = ajv.compile(loadJson(`${CONTRACTS}knowledge_sources.v1.json`) as object);
  return (artifact) => validate(artifact);
}

const RUNNERS: Readonly<Record<string, Runner>> = {
  source_ids(file) {
    eachCase(file, (vector) => {
      expect(sourceId(vector["record"] as object)).toBe(vector["expected_id"]);
    });
  },

  envelopes(file) {
    const schemaValid = validateArtifact();
    eachCase(file, (vector) => {
      const result = readEnvelope(vector["content"], vector["artifact"]);
      expect({
        sources: result.sources.map((source) => source.id),
        rejected: result.rejected.map(({ key, index, reason }) => ({ key, index, reason })),
        error: result.error,
      }).toStrictEqual(vector["expected"]);
      expect(schemaValid(vector["artifact"])).toBe(vector["schema_valid"]);
    });
  },

  citations(file) {
    eachCase(file, (vector) => {
      const markdown = vector["markdown"] as string;
      expect(findCitations(markdown).map((citation) => ({ ...citation }))).toStrictEqual(
        vector["expected"],
      );
      if ("keep_ids" in vector) {
        expect(relabelOrphans(markdown, vector["keep_ids"] as string[])).toBe(vector["relabeled"]);
      }
    });
  },

  native_ragflow(file) {
    eachCase(file, (vector) => {
      const result = readNative(vector["content"], vector["artifact"], vector["tool_name"]);
      expect({
        sources: result.sources.map((source) => source.id),
        rejected: result.rejected.map(({ index, reason }) => ({ index, reason })),
        error: result.error,
      }).toStrictEqual(vector["expected"]);
    });
  },

  saved_evidence(file) {
    eachCase(file, (vector) => {
      const result = readSavedEvidence(vector["report"], vector["payload"]);
      expect({
        sources: result.evidence === null ? null : result.evidence.sources.map((source) => source.id),
        omitted_count: result.evidence === null ? null : result.evidence.omittedCount,
        error: result.error,
        index: result.index,
      }).toStrictEqual(vector["expected"]);
    });
  },

  // The budget itself runs in Python (the middleware); what reaches the browser must read back
  // exactly: the retained records verify, their texts are wholly in the content, and every
  // `#knowledge-` left is the destination of a retained entry's link.
  native_budgets(file) {
    const handle = /#(?:user-content-)?knowledge-/g;
    const link = /\]\(#knowledge-([a-f0-9]{32}-[1-9][0-9]{0,2})\)/g;
    eachCase(file, (vector) => {
      const expected = vector["expected"] as {
        generic: boolean;
        content?: string;
        artifact: unknown;
        kept?: string[];
      };
      if (expected.generic) {
        expect(expected.artifact).toStrictEqual(vector["artifact"]);
        return;
      }
      const content = expected.content ?? "";
      expect([...content].length).toBeLessThanOrEqual(vector["max_chars"] as number);
      const result = readNative(content, expected.artifact, vector["tool_name"]);
      expect(result.error).toBeNull();
      expect(result.rejected).toEqual([]);
      expect(result.sources.map((source) => source.id)).toEqual(expected.kept);
      for (const source of result.sources) expect(content.includes(source.text)).toBe(true);
      const handles = [...content.matchAll(handle)].map((match) => match.index);
      const links = [...content.matchAll(link)];
      expect(handles).toEqual(links.map((match) => match.index + 2));
      expect(links.map((match) => match[1])).toEqual(expected.kept);
    });
  },

  // No TypeScript grammar exists: the runner checks the half both languages share. The links a
  // grammar allows are exactly the verified records of the tool messages (this side's readers),
  // and every answer the grammar must accept cites only those links, exactly.
  citation_grammar(file) {
    eachCase(file, (vector) => {
      const verified = new Set<string>();
      for (const message of vector["messages"] as Array<Record<string, unknown>>) {
        if (message["type"] !== "tool") continue;
        const { content, artifact, name } = message;
        for (const source of readEnvelope(content, artifact).sources) verified.add(source.id);
        for (const source of readNative(content, artifact, name).sources) verified.add(source.id);
      }
      const links = vector["expected_links"] as string[];
      const linked = links.map((link) => /\(#knowledge-(?:source-)?([^)]+)\)$/.exec(link)?.[1]);
      const wanted = vector["ids"] as string[] | null;
      const expected = [...verified].filter((id) => wanted === null || wanted.includes(id));
      expect(new Set(linked)).toStrictEqual(new Set(expected));
      for (const text of vector["accept"] as string[]) {
        const points = Array.from(text);
        for (const citation of findCitations(text)) {
          expect(links).toContain(points.slice(citation.start, citation.end).join(""));
        }
      }
    });
  },

  visible_text(file) {
    eachCase(file, (vector) => {
      expect(visibleText(vector["text"] as string)).toBe(vector["expected"]);
    });
  },
};

describe("contracts/vectors", () => {
  it("has at least the three core vector files", () => {
    const kinds = vectorFiles.map(([, file]) => file.file);
    expect(kinds).toEqual(expect.arrayContaining(["source_ids", "envelopes", "citations"]));
  });

  for (const [name, file] of vectorFiles) {
    describe(name, () => {
      it("has a runner for its `file` kind", () => {
        expect(Object.keys(RUNNERS)).toContain(file.file);
      });

      it("has unique, non-empty case ids", () => {
        const ids = file.cases.map((vector) => vector.id);
        expect(ids.length).toBeGreaterThan(0);
        expect(new Set(ids).size).toBe(ids.length);
      });

      RUNNERS[file.file]?.(file);
    });
  }
});
