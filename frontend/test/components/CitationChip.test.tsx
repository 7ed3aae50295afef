// @vitest-environment jsdom
import { cleanup, render, screen } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { afterEach, describe, expect, it } from "vitest";

import { KnowledgeMarkdown, createSourceResolver } from "../../src/index.js";
import { ai, cite, human, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const guide = sharedRecord({
  title: "Deer field guide",
  excerpt: "Deer eat acorns in autumn.",
  url: "https://docs.example/deer",
});
const notes = sharedRecord({ title: "Ranger notes", excerpt: "Fawns are born in spring." });

function setup(markdown: string) {
  const messages = [human("q"), toolMessage([guide, notes]), ai(markdown)];
  render(
    <>
      <button type="button">before</button>
      <KnowledgeMarkdown
        markdown={markdown}
        messages={messages}
        messageIndex={2}
        resolver={createSourceResolver()}
      />
      <button type="button">after</button>
    </>,
  );
  return userEvent.setup();
}

const previewOf = (button: HTMLElement): HTMLElement =>
  document.getElementById(button.getAttribute("aria-describedby")!)!;

describe("citation chip accessibility", () => {
  it("is reachable by Tab and opens its preview on focus", async () => {
    const user = setup(`A ${cite(guide)} B ${cite(notes)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    expect(previewOf(chip).hidden).toBe(true);
    await user.tab(); // "before"
    await user.tab();
    expect(document.activeElement).toBe(chip);
    expect(previewOf(chip).hidden).toBe(false);
    expect(chip.getAttribute("aria-expanded")).toBe("true");
  });

  it("describes the chip with the preview (provider, title, excerpt)", () => {
    setup(`A ${cite(guide)}`);
    const chip = screen.getByRole("button", {
      name: "Source 1: Deer field guide",
      description: (text) => text.includes("Deer eat acorns in autumn.") && text.startsWith("local"),
    });
    expect(chip.getAttribute("aria-describedby")).toMatch(/^dk-preview-/);
  });

  it("keeps the preview open while focus moves into its link, and Escape closes it", async () => {
    const user = setup(`A ${cite(guide)} B ${cite(notes)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    await user.tab();
    await user.tab();
    await user.tab(); // into the preview's link
    const link = screen.getByRole("link", { name: /Open source/ });
    expect(document.activeElement).toBe(link);
    expect(previewOf(chip).hidden).toBe(false);
    await user.keyboard("{Escape}");
    expect(previewOf(chip).hidden).toBe(true);
    expect(document.activeElement).toBe(chip); // focus returns to the chip
    await user.tab(); // the link is hidden now: focus goes to the next chip
    const next = screen.getByRole("button", { name: "Source 2: Ranger notes" });
    expect(document.activeElement).toBe(next);
    expect(previewOf(chip).hidden).toBe(true);
    expect(previewOf(next).hidden).toBe(false);
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "after" }));
    expect(previewOf(next).hidden).toBe(true);
  });

  it("opens on hover and closes when the pointer leaves or Escape is pressed", async () => {
    const user = setup(`A ${cite(guide)}`);
    const chip = screen.getByRole("button", { name: "Source 1: Deer field guide" });
    await user.hover(chip);
    expect(previewOf(chip).hidden).toBe(false);
    await user.hover(previewOf(chip)); // the preview itself is hoverable
    expect(previewOf(chip).hidden).toBe(false);
    await user.keyboard("{Escape}");
    expect(previewOf(chip).hidden).toBe(true);
    await user.unhover(previewOf(chip));
    await user.hover(chip);
    expect(previewOf(chip).hidden).toBe(false);
    await user.unhover(chip);
    expect(previewOf(chip).hidden).toBe(true);
  });

  it("gives inert labels an accessible reason and keeps them out of the tab order", async () => {
    const markdown = `A ${cite({ id: "f".repeat(32) }, "Missing")} B [citation:X](#knowledge-source-bad)`;
    const user = setup(markdown);
    expect(screen.getByText("evidence not loaded").closest("[data-dk-reason]")?.textContent).toBe(
      "Missing (evidence not loaded)",
    );
    expect(screen.getByText("invalid citation").closest("[data-dk-reason]")?.textContent).toBe(
      "X (invalid citation)",
    );
    await user.tab();
    await user.tab();
    expect(document.activeElement).toBe(screen.getByRole("button", { name: "after" }));
  });
});
