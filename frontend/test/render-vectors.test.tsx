// @vitest-environment jsdom
/**
 * The renderer against (1) its own cases (test/fixtures/render_cases.json) and (2) every shared
 * citation vector (contracts/vectors/citations.json) rendered through KnowledgeMarkdown.
 */
import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { cleanup, fireEvent, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import {
  KnowledgeMarkdown,
  createSourceResolver,
  type KnowledgeSource,
  type ResolvedSource,
  type SourceLookup,
} from "../src/index.js";
import type { NativeSource } from "../src/native.js";
import { ai, contentFor, human, nativeToolMessage, sharedRecord, toolMessage } from "./components/fixtures.js";

afterEach(cleanup);

const HERE = dirname(fileURLToPath(import.meta.url));
const load = (path: string): unknown => JSON.parse(readFileSync(resolve(HERE, path), "utf8")) as unknown;

interface Rendered {
  readonly chips: string[];
  readonly numbers: number[];
  readonly inert: string[];
  readonly links: string[];
  readonly webLinks: number;
  readonly text: string;
}

function observe(): Rendered {
  const chips = [...document.querySelectorAll<HTMLElement>(".dk-chip")];
  // Previews mount only while open: open each in turn and read what it shows.
  const previews: string[] = [];
  for (const chip of chips) {
    fireEvent.mouseOver(chip);
    const preview = document.getElementById(chip.getAttribute("aria-describedby") ?? "");
    if (preview?.classList.contains("dk-preview") !== true) throw new Error("the preview did not open");
    previews.push(preview.textContent ?? "");
    fireEvent.mouseOut(chip);
  }
  const links = [...document.querySelectorAll("a")].filter((a) => a.closest(".dk-preview") === null);
  return {
    chips: chips.map((chip) => chip.textContent ?? ""),
    numbers: chips.map((chip) => Number(chip.getAttribute("data-dk-number"))),
    inert: [...document.querySelectorAll("[data-dk-reason]")].map((el) => el.getAttribute("data-dk-reason")!),
    links: links.map((a) => a.getAttribute("href")!),
    webLinks: document.querySelectorAll("a.dk-web-citation").length,
    text: [document.body.textContent ?? "", ...previews].join("\n"),
  };
}

// ---------------------------------------------------------------------------------------------

interface HistoryItem {
  readonly tool?: string[];
  readonly name?: string;
  readonly forge?: "edit_title";
  readonly native?: string[];
  readonly ai_artifact?: string[];
  readonly human_artifact?: string[];
  readonly dual?: { native: string[]; shared: string[] };
}

interface RenderCase {
  readonly id: string;
  readonly description: string;
  readonly history: HistoryItem[];
  readonly after?: HistoryItem[];
  readonly markdown: string;
  readonly expect: {
    chips: string[];
    numbers?: number[];
    inert: string[];
    links: string[];
    contains?: string[];
    excludes?: string[];
    absent?: string[];
  };
}

const fixture = load("fixtures/render_cases.json") as {
  records: Record<string, Omit<KnowledgeSource, "id">>;
  native: Record<string, Record<string, unknown>>;
  cases: RenderCase[];
};
const records = Object.fromEntries(
  Object.entries(fixture.records).map(([name, fields]) => [name, sharedRecord(fields)]),
);

function messageFor(item: HistoryItem): Record<string, unknown> {
  const shared = (names: string[]) => names.map((name) => records[name]!);
  if (item.tool !== undefined) {
    const list = shared(item.tool);
    const artifactRecords =
      item.forge === "edit_title" ? list.map((record) => ({ ...record, title: "FORGED" })) : list;
    return toolMessage(list, {
      ...(item.name === undefined ? {} : { name: item.name }),
      artifact: { knowledge_sources_version: 1, knowledge_sources: artifactRecords },
    });
  }
  if (item.native !== undefined) {
    return nativeToolMessage(item.native.map((name) => fixture.native[name]!), item.name);
  }
  if (item.ai_artifact !== undefined || item.human_artifact !== undefined) {
    const list = shared(item.ai_artifact ?? item.human_artifact ?? []);
    const artifact = { knowledge_sources_version: 1, knowledge_sources: list };
    return (item.ai_artifact !== undefined ? ai : human)(contentFor(list), { artifact });
  }
  if (item.dual !== undefined) {
    const nativeMessage = nativeToolMessage(item.dual.native.map((name) => fixture.native[name]!), "task");
    const list = shared(item.dual.shared);
    return {
      ...nativeMessage,
      content: `${String(nativeMessage["content"])}\n\n${contentFor(list)}`,
      artifact: {
        ...(nativeMessage["artifact"] as object),
        knowledge_sources_version: 1,
        retrieval_sources: list,
      },
    };
  }
  throw new Error(`unknown history item ${JSON.stringify(item)}`);
}

describe("render cases", () => {
  for (const testCase of fixture.cases) {
    it(`${testCase.id}: ${testCase.description}`, () => {
      const markdown = testCase.markdown.replace(/\{\{(\w+)\}\}/g, (_, name: string) => records[name]!.id);
      const messages = [
        human("question"),
        ...testCase.history.map(messageFor),
        ai(markdown),
        ...(testCase.after ?? []).map(messageFor),
      ];
      const index = testCase.history.length + 1;
      render(
        <KnowledgeMarkdown
          markdown={markdown}
          messages={messages}
          messageIndex={index}
          resolver={createSourceResolver()}
        />,
      );
      const seen = observe();
      expect(seen.chips).toEqual(testCase.expect.chips);
      if (testCase.expect.numbers !== undefined) expect(seen.numbers).toEqual(testCase.expect.numbers);
      expect(seen.inert).toEqual(testCase.expect.inert);
      expect(seen.links).toEqual(testCase.expect.links);
      for (const text of testCase.expect.contains ?? []) expect(seen.text).toContain(text);
      for (const text of testCase.expect.excludes ?? []) expect(seen.text).not.toContain(text);
      for (const tag of testCase.expect.absent ?? []) {
        expect(document.querySelector(`.dk-markdown ${tag}`)).toBeNull();
      }
    });
  }
});

// ---------------------------------------------------------------------------------------------

interface CitationVector {
  readonly id: string;
  readonly markdown: string;
  readonly expected: ReadonlyArray<{ kind: string }>;
}

/** Every well-formed id resolves: isolates classification from evidence. */
const everything: SourceLookup = {
  get(id: string): ResolvedSource {
    if (id.includes("-")) {
      const record: NativeSource = {
        id,
        provider: "ragflow",
        dataset_id: "d",
        document_id: "doc",
        chunk_id: "c",
        dataset_name: "DS",
        document_name: `N-${id}`,
        text: "native",
        truncated: false,
        pages: [],
      };
      return { kind: "native", id, record };
    }
    return { kind: "shared", id, record: { id, provider: "test", title: `S-${id}`, excerpt: "shared" } };
  },
  size: 0,
  sources: () => [],
};

/**
 * Where the renderer (a full CommonMark parser) and the §4 scanner (a deliberate subset) differ.
 * Each divergence is on the safe side: nothing navigable appears that the scanner would refuse.
 */
const DIVERGENCES: Readonly<Record<string, { chips: number; malformed: number; web: number; why: string }>> = {
  "cit-024-javascript-href-parens": {
    chips: 0,
    malformed: 1,
    web: 0,
    why: "CommonMark allows balanced parentheses in a destination; the sanitizer drops the javascript: href and the citation: label makes it an inert malformed label",
  },
  "cit-049-label-2049": {
    chips: 1,
    malformed: 0,
    web: 0,
    why: "CommonMark has no length limit on inline link text; the destination is exact, so the chip is still the verified source",
  },
  "cit-051-destination-2049": {
    chips: 0,
    malformed: 1,
    web: 0,
    why: "CommonMark has no destination length limit, so it parses as a link; the URL is longer than the allowlist's 2,048 code points, so the web citation renders as an inert label",
  },
};

describe("shared citation vectors through KnowledgeMarkdown", () => {
  const file = load("../../contracts/vectors/citations.json") as {
    cases: CitationVector[];
  };
  for (const vector of file.cases) {
    it(vector.id, () => {
      render(<KnowledgeMarkdown markdown={vector.markdown} sources={everything} />);
      const seen = observe();
      const count = (...kinds: string[]) => vector.expected.filter((c) => kinds.includes(c.kind)).length;
      const divergence = DIVERGENCES[vector.id];
      const malformed = seen.inert.filter((reason) => reason !== "evidence_not_loaded").length;
      expect(seen.inert.filter((reason) => reason === "evidence_not_loaded")).toEqual([]);
      expect({ chips: seen.chips.length, malformed, web: seen.webLinks }).toEqual(
        divergence === undefined
          ? { chips: count("shared", "native"), malformed: count("malformed"), web: count("web") }
          : { chips: divergence.chips, malformed: divergence.malformed, web: divergence.web },
      );
      // Chips carry the ids the scanner found, in order.
      const ids = [...document.querySelectorAll(".dk-citation")].map((el) => el.getAttribute("data-dk-source-id"));
      if (divergence === undefined) {
        expect(ids).toEqual(
          vector.expected
            .filter((c) => c.kind === "shared" || c.kind === "native")
            .map((c) => (c as unknown as { source_id: string }).source_id),
        );
      }
    });
  }
});
