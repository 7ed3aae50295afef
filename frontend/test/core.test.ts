/**
 * The `/core` entry point (src/core.ts): the readers, the rules, the ids and the handle grammar,
 * loading neither React nor unified, remark, rehype or the Markdown parser.
 */

import { describe, expect, it } from "vitest";

import * as core from "../src/core.js";
import * as api from "../src/index.js";
import { importGraph } from "./importGraph.js";

/** The public runtime API of `@deerflow/knowledge-citations/core`. Change it on purpose, here. */
const CORE_EXPORTS = [
  "CITATION_LABEL_PREFIX",
  "CONTROL_CHARACTERS",
  "ENVELOPE_ERRORS",
  "ENVELOPE_VERSION",
  "EXTERNAL_LINK_REL",
  "IDENTITY_FIELDS",
  "ID_DOMAIN_TAG",
  "ID_HEX_CHARS",
  "ID_PATTERN",
  "INVISIBLE_FORMAT_RANGES",
  "KNOWLEDGE_SOURCES_KEY",
  "MAX_DATASET_NAME_CHARS",
  "MAX_EXCERPT_CHARS",
  "MAX_NATIVE_LOCATOR_CHARS",
  "MAX_NATIVE_NAME_CHARS",
  "MAX_NATIVE_PAGES",
  "MAX_NATIVE_SOURCES",
  "MAX_NATIVE_TEXT_CHARS",
  "MAX_PAGE",
  "MAX_PROVIDER_CHARS",
  "MAX_SAVED_PAYLOAD_CHARS",
  "MAX_SAVED_SOURCES",
  "MAX_SOURCES",
  "MAX_TITLE_CHARS",
  "MAX_URL_CHARS",
  "MIN_PAGE",
  "NATIVE_HANDLE_PREFIX",
  "NATIVE_ID_PATTERN",
  "NATIVE_ID_SYNTAX",
  "NATIVE_PROVIDER",
  "NATIVE_TOOL_NAMES",
  "NATIVE_VERSION",
  "OPTIONAL_FIELDS",
  "PROVIDER_PATTERN",
  "RECORD_FIELDS",
  "REJECTION_REASONS",
  "REQUIRED_FIELDS",
  "RESERVED_KEYS",
  "RETRIEVAL_SOURCES_KEY",
  "SHARED_HANDLE_PREFIX",
  "SHARED_ID_SYNTAX",
  "URL_PATTERN",
  "USER_CONTENT_PREFIX",
  "VERSION_KEY",
  "WHITE_SPACE",
  "canonicalIdentity",
  "classifyDestination",
  "classifyHref",
  "codePointLength",
  "codePointSlice",
  "codePointToUtf16Index",
  "handleFor",
  "hasControl",
  "hasLoneSurrogate",
  "isBlank",
  "isSafeHref",
  "isValidDatasetName",
  "isValidExcerpt",
  "isValidId",
  "isValidPage",
  "isValidProvider",
  "isValidTitle",
  "isValidUrl",
  "nativeHandle",
  "readEnvelope",
  "readNative",
  "readSavedEvidence",
  "safeExternalUrl",
  "savedEvidenceLookup",
  "sourceId",
  "sourceLookupFrom",
  "textParts",
  "utf16ToCodePointIndex",
  "validateRecordFields",
  "visibleText",
];

/** What a reader must never load: React, the unified pipeline, the Markdown parser and trees. */
const RENDERER = /^(react|react-dom|react-markdown|unified|vfile|remark-|rehype-|hast-|mdast-|micromark)/;

it("keeps the sorted public export list stable", () => {
  expect(Object.keys(core).sort()).toEqual(CORE_EXPORTS);
  expect([...CORE_EXPORTS].sort()).toEqual(CORE_EXPORTS);
});

it("is part of the main entry point: the very same objects", () => {
  const main = api as Record<string, unknown>;
  for (const [name, value] of Object.entries(core)) expect(main[name], name).toBe(value);
});

describe("the import graph", () => {
  it("of core reaches only the hashing and canonical-JSON packages", () => {
    const graph = importGraph("core.ts");
    expect(graph.packages).toEqual(["canonicalize"]);
    expect(graph.files.filter((file) => RENDERER.test(file) || /^(components\/|citations|guard|resolve)/.test(file))).toEqual([]);
  });

  it("of the main entry point does reach the renderer (the check sees what it looks for)", () => {
    const graph = importGraph("index.ts");
    for (const name of ["react", "unified", "rehype-sanitize", "remark-parse", "mdast-util-from-markdown"]) {
      expect(graph.packages).toContain(name);
    }
    expect(graph.files).toContain("citations.ts");
  });

  it.each(["handles.ts", "contract.ts", "envelope.ts", "native.ts", "savedEvidence.ts", "lookup.ts", "ids.ts"])(
    "of %s stays clear of the citation scanner",
    (entry) => {
      const graph = importGraph(entry);
      expect(graph.files).not.toContain("citations.ts");
      expect(graph.packages.filter((name) => RENDERER.test(name))).toEqual([]);
    },
  );

  it("of handles.ts is the module alone", () => {
    expect(importGraph("handles.ts")).toEqual({ files: ["handles.ts"], packages: [] });
  });
});
