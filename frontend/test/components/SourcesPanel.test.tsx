// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { SourcesPanel, createSourceResolver } from "../../src/index.js";
import { ai, cite, human, nativeRecord, nativeToolMessage, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const a = sharedRecord({ title: "Alpha", excerpt: "Alpha text.", page: 3 });
const b = sharedRecord({ title: "Beta", excerpt: "Beta text.", url: "https://beta.example/doc" });
const c = sharedRecord({ title: "Gamma", excerpt: "Gamma text." });
const hex = "abcdefabcdefabcdefabcdefabcdef01";
const n = nativeRecord({ id: `${hex}-7`, text: "Native text.", document_name: "" });

function panel(markdown: string) {
  const messages = [human("q"), toolMessage([a, b, c]), nativeToolMessage([n]), ai(markdown)];
  return render(
    <SourcesPanel markdown={markdown} messages={messages} messageIndex={3} resolver={createSourceResolver()} />,
  );
}

describe("SourcesPanel", () => {
  it("lists distinct verified sources in first-citation order and counts the rest", () => {
    const missing = { id: "0".repeat(32) };
    panel(
      `x ${cite(b)} y ${cite(a)} z ${cite(b)} [1](#knowledge-${hex}-7) ${cite(missing)} ${cite(missing)} ` +
        "[citation:Bad](#knowledge-source-zz) `" + cite(c) + "`",
    );
    const region = screen.getByRole("region", { name: "Sources" });
    const items = within(region).getAllByRole("listitem");
    expect(items.map((item) => item.querySelector(".dk-title")?.textContent)).toEqual([
      "Beta",
      "Alpha",
      "Untitled document",
    ]);
    expect(items[0]!.querySelector("a")?.getAttribute("href")).toBe("https://beta.example/doc");
    expect(items[1]!.textContent).toContain("Page 3");
    expect(region.textContent).toContain("Sources (3)");
    expect(region.textContent).toContain("1 cited source: evidence not loaded");
    expect(region.textContent).toContain("1 malformed citation");
    expect(region.textContent).not.toContain("Gamma"); // cited only inside code
  });

  it("renders nothing for a message without citations", () => {
    const { container } = panel("No citations here, just [a link](https://example.com) and [1].");
    expect(container.innerHTML).toBe("");
  });
});

describe("SourcesPanel, lean and unambiguous", () => {
  it("mounts its list only while open", () => {
    const markdown = `x ${cite(a)} y ${cite(b)}`;
    const messages = [human("q"), toolMessage([a, b, c]), ai(markdown)];
    render(<SourcesPanel markdown={markdown} messages={messages} messageIndex={2} defaultOpen={false} />);
    const toggle = screen.getByRole("button", { name: "Sources (2)" });
    expect(document.querySelector(".dk-sources-list, .dk-excerpt")).toBeNull();
    expect(document.querySelector(".dk-sources")!.querySelectorAll("*")).toHaveLength(1);
    expect(toggle.getAttribute("aria-expanded")).toBe("false");
    fireEvent.click(toggle);
    expect(toggle.getAttribute("aria-expanded")).toBe("true");
    expect(document.getElementById(toggle.getAttribute("aria-controls")!)!.querySelectorAll(".dk-source")).toHaveLength(2);
    fireEvent.click(toggle);
    expect(document.querySelector(".dk-sources-list")).toBeNull();
  });

  it("tells apart two sources with one title", () => {
    const first = sharedRecord({ title: "Manual", excerpt: "First part." });
    const second = sharedRecord({ title: "Manual", excerpt: "Second part." });
    const markdown = `x ${cite(first)} y ${cite(second)}`;
    const messages = [human("q"), toolMessage([first, second]), ai(markdown)];
    render(<SourcesPanel markdown={markdown} messages={messages} messageIndex={2} />);
    expect([...document.querySelectorAll(".dk-source .dk-title-line")].map((el) => el.textContent)).toEqual([
      "Manual · excerpt 1",
      "Manual · excerpt 2",
    ]);
  });
});
