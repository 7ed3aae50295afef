// @vitest-environment jsdom
/** Bidi title spoofing (issue 12): chips, previews and panels show controls, and isolate titles. */
import { cleanup, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { KnowledgeMarkdown, SourcesPanel, createSourceResolver } from "../../src/index.js";
import { ai, cite, human, nativeRecord, nativeToolMessage, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const SPOOF = "invoice_\u202efdp.exe.md"; // displays as "invoice_dm.exe.pdf"
const SHOWN = "invoice_<U+202E>fdp.exe.md";
const spoof = sharedRecord({ title: SPOOF, excerpt: "Pay 100.", dataset_name: "Fin\u2067ance\u2069" });
const hex = "abcdefabcdefabcdefabcdefabcdef02";
const native = nativeRecord({ id: `${hex}-1`, text: "Native.", document_name: SPOOF, dataset_name: "HR\u200b" });

function renderThread(markdown: string) {
  const messages = [human("q"), toolMessage([spoof]), nativeToolMessage([native]), ai(markdown)];
  const resolver = createSourceResolver();
  return render(
    <>
      <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={3} resolver={resolver} />
      <SourcesPanel markdown={markdown} messages={messages} messageIndex={3} resolver={resolver} />
    </>,
  );
}

const noControls = (text: string | null | undefined): boolean => !/[\u202a-\u202e\u2066-\u2069\u200b]/u.test(text ?? "");

describe("titles with bidi controls", () => {
  it("the chip and its preview show the control and isolate the title", () => {
    const { container } = renderThread(`Pay ${cite(spoof, SPOOF)} and [1](#knowledge-${hex}-1).`);
    const chips = [...container.querySelectorAll(".dk-chip-title")];
    expect(chips.map((chip) => chip.textContent)).toEqual([SHOWN, SHOWN]);
    expect(chips.every((chip) => chip.tagName === "BDI")).toBe(true);
    const button = screen.getAllByRole("button", { name: /invoice_/ })[0]!;
    expect(button.getAttribute("aria-label")).toContain(SHOWN);
    const preview = document.getElementById(button.getAttribute("aria-describedby")!)!;
    expect(preview.querySelector(".dk-title")?.textContent).toBe(SHOWN);
    expect(preview.querySelector(".dk-dataset bdi")?.textContent).toBe("Fin<U+2067>ance<U+2069>");
    expect(noControls(container.querySelector(".dk-chip")?.parentElement?.textContent)).toBe(true);
  });

  it("the sources panel shows it too, for shared and native records", () => {
    renderThread(`Pay ${cite(spoof)} and [1](#knowledge-${hex}-1).`);
    const region = screen.getByRole("region", { name: "Sources" });
    const items = within(region).getAllByRole("listitem");
    expect(items.map((item) => item.querySelector(".dk-title")?.textContent)).toEqual([SHOWN, SHOWN]);
    expect(items[1]!.querySelector(".dk-dataset")?.textContent).toContain("HR<U+200B>");
    expect(noControls(region.textContent)).toBe(true);
  });

  it("inert and web labels written by the model are shown the same way", () => {
    const missing = { id: "0".repeat(32) };
    const { container } = renderThread(
      `${cite(missing, SPOOF)} and [citation:\u202eweb](https://example.org/x)`,
    );
    expect(container.querySelector(".dk-inert-label")?.textContent).toBe(SHOWN);
    expect(container.querySelector(".dk-web-label")?.textContent).toBe("<U+202E>web");
    expect(container.querySelector(".dk-web-label")?.tagName).toBe("BDI");
  });
});
