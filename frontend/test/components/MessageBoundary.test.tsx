// @vitest-environment jsdom
import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it, vi } from "vitest";

import { KnowledgeMarkdown, MessageBoundary, createSourceResolver } from "../../src/index.js";
import { ai, human } from "./fixtures.js";

afterEach(cleanup);

function Boom({ text }: { text: string }): never {
  throw new RangeError(`Maximum call stack size exceeded (${text.length})`);
}

function thread(texts: string[]) {
  const messages = [human("q"), ...texts.map((text) => ai(text))];
  return (
    <>
      {texts.map((text, index) => (
        <article key={index}>
          <KnowledgeMarkdown markdown={text} messages={messages} messageIndex={index + 1} resolver={createSourceResolver()} />
        </article>
      ))}
    </>
  );
}

describe("MessageBoundary", () => {
  it("shows the raw text of a message that fails to render, as text, and keeps its siblings", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const onError = vi.fn();
    const hostile = '<img src=x onerror="alert(1)"> **bold**';
    render(
      <>
        <MessageBoundary text={hostile} onError={onError}>
          <Boom text={hostile} />
        </MessageBoundary>
        <p>the next message</p>
      </>,
    );
    errors.mockRestore();
    expect(screen.getByText(hostile).className).toBe("dk-plain-text");
    expect(screen.getByText(/could not be formatted/)).toBeTruthy();
    expect(document.querySelector("img")).toBeNull();
    expect(screen.getByText("the next message")).toBeTruthy();
    expect(onError).toHaveBeenCalledTimes(1);
  });

  it("tries again when the text changes (the next streamed token)", () => {
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const { rerender } = render(
      <MessageBoundary text="a">
        <Boom text="a" />
      </MessageBoundary>,
    );
    expect(document.querySelector(".dk-plain")).not.toBeNull();
    rerender(
      <MessageBoundary text="ab">
        <p>rendered</p>
      </MessageBoundary>,
    );
    errors.mockRestore();
    expect(screen.getByText("rendered")).toBeTruthy();
  });
});

describe("KnowledgeMarkdown survives hostile messages", () => {
  it("renders the quote, list and emphasis bombs and the rest of the thread", () => {
    const bombs = [">".repeat(10_000), "- ".repeat(5_000) + "x", "*a".repeat(25_000), "fine **message**"];
    render(thread(bombs));
    const articles = document.querySelectorAll("article");
    expect(articles).toHaveLength(4);
    // Nesting capped: the deepest blockquote is MAX_NESTING_DEPTH deep, the rest is text.
    expect(articles[0]!.querySelectorAll("blockquote").length).toBe(32);
    expect(articles[0]!.textContent).toContain(">".repeat(100));
    expect(articles[1]!.querySelectorAll("li").length).toBe(32);
    // Too much emphasis: plain text, all of it.
    expect(articles[2]!.querySelector(".dk-plain-text")!.textContent).toBe("*a".repeat(25_000));
    expect(articles[3]!.querySelector("strong")!.textContent).toBe("message");
  });
});
