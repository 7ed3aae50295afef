// @vitest-environment jsdom
/** A message's KnowledgeMarkdown parse also serves its SourcesPanel (counted, not timed). */
import { cleanup, render } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import { citationsOf, memoWork } from "../../src/citationMemo.js";
import { findCitations } from "../../src/citations.js";
import { KnowledgeMarkdown, SourcesPanel } from "../../src/index.js";

afterEach(cleanup);

const id = "0123456789abcdef0123456789abcdef";

describe("one parse per message", () => {
  it("KnowledgeMarkdown's parse serves SourcesPanel: the memo parses nothing itself", () => {
    const markdown = `Once [citation:A](#knowledge-source-${id}) and [r][1].\n\n[1]: #knowledge-source-${id}\n`;
    const messages = [{ type: "ai", id: "a1", content: markdown }];
    const before = memoWork.finds;
    render(
      <>
        <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={0} />
        <SourcesPanel markdown={markdown} messages={messages} messageIndex={0} />
      </>,
    );
    expect(memoWork.finds).toBe(before);
    // What was remembered is exactly what findCitations finds.
    expect(citationsOf(markdown)).toEqual(findCitations(markdown));
    expect(memoWork.finds).toBe(before);
  });

  it("with host remark plugins the renderer's tree may differ, so the panel parses for itself", () => {
    const markdown = `Twice [citation:A](#knowledge-source-${id}).`;
    const messages = [{ type: "ai", id: "a2", content: markdown }];
    const before = memoWork.finds;
    render(
      <>
        <KnowledgeMarkdown markdown={markdown} messages={messages} messageIndex={0} remarkPlugins={[]} />
        <SourcesPanel markdown={markdown} messages={messages} messageIndex={0} />
      </>,
    );
    expect(memoWork.finds).toBe(before + 1);
  });
});
