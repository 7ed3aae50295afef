// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen } from "@testing-library/react";
import { useCallback, useRef, type ReactElement } from "react";
import { afterEach, describe, expect, it } from "vitest";

import { NO_CHIP, isPinned, openChip, useChipGroup } from "../../src/components/chipState.js";

afterEach(cleanup);

/** Three chips under one delegating element; the open one is followed by its preview. */
function Group(): ReactElement {
  const root = useRef<HTMLDivElement>(null);
  const chips = useCallback(() => root.current?.querySelectorAll(".dk-chip") ?? [], []);
  const group = useChipGroup("group-preview", chips);
  const open = openChip(group.state);
  return (
    <div ref={root} data-testid="group" data-open={open} data-pinned={isPinned(group.state)} {...group.handlers}>
      {[0, 1, 2].map((index) => (
        <span key={index}>
          <button type="button" className="dk-chip">
            chip {index}
          </button>
          {open === index && (
            <span id="group-preview" className="dk-preview">
              <a href="#x">link {index}</a>
            </span>
          )}
        </span>
      ))}
      <button type="button">outside</button>
    </div>
  );
}

const openIndex = (): string | null => screen.getByTestId("group").getAttribute("data-open");
const chip = (index: number): HTMLElement => screen.getByRole("button", { name: `chip ${index}` });

describe("useChipGroup", () => {
  it("starts closed", () => {
    expect(openChip(NO_CHIP)).toBe(-1);
    render(<Group />);
    expect(openIndex()).toBe("-1");
  });

  it("opens the hovered chip, moves to the next one, and stays open over the preview", () => {
    render(<Group />);
    fireEvent.mouseOver(chip(1));
    expect(openIndex()).toBe("1");
    const preview = document.getElementById("group-preview")!;
    fireEvent.mouseOut(chip(1), { relatedTarget: preview });
    fireEvent.mouseOver(preview, { relatedTarget: chip(1) });
    expect(openIndex()).toBe("1");
    fireEvent.mouseOut(preview, { relatedTarget: chip(2) });
    fireEvent.mouseOver(chip(2), { relatedTarget: preview });
    expect(openIndex()).toBe("2");
    // A chip that is not the open one closing changes nothing.
    fireEvent.blur(chip(0), { relatedTarget: null });
    expect(openIndex()).toBe("2");
    fireEvent.mouseOut(chip(2), { relatedTarget: document.body });
    expect(openIndex()).toBe("-1");
  });

  it("pins on click, keeps focus moves into the preview, closes when focus leaves both", () => {
    render(<Group />);
    fireEvent.focus(chip(0));
    fireEvent.click(chip(0));
    expect(openIndex()).toBe("0");
    expect(screen.getByTestId("group").getAttribute("data-pinned")).toBe("true");
    const link = screen.getByRole("link", { name: "link 0" });
    fireEvent.blur(chip(0), { relatedTarget: link });
    fireEvent.focus(link, { relatedTarget: chip(0) });
    expect(openIndex()).toBe("0");
    fireEvent.blur(link, { relatedTarget: screen.getByRole("button", { name: "outside" }) });
    expect(openIndex()).toBe("-1");
    expect(screen.getByTestId("group").getAttribute("data-pinned")).toBe("false");
  });

  it("closes with Escape and returns focus to the chip; the pointer coming back reopens", () => {
    render(<Group />);
    fireEvent.mouseOver(chip(1));
    const link = screen.getByRole("link", { name: "link 1" });
    link.focus();
    fireEvent.keyDown(link, { key: "Escape" });
    expect(openIndex()).toBe("-1");
    expect(document.activeElement).toBe(chip(1));
    fireEvent.mouseOut(chip(1), { relatedTarget: document.body });
    fireEvent.mouseOver(chip(1), { relatedTarget: document.body });
    expect(openIndex()).toBe("1");
  });
});
