// @vitest-environment jsdom
import { cleanup, render, screen } from "@testing-library/react";
import { afterEach, describe, expect, it } from "vitest";

import {
  KnowledgeMarkdown,
  SourcesPanel,
  createSourceResolver,
  sourceLookupFrom,
  type KnowledgeSource,
} from "../../src/index.js";
import { ai, cite, contentFor, human, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const guide = sharedRecord({ title: "Deer field guide", excerpt: "Deer eat acorns in autumn." });

function renderAt(messages: ReadonlyArray<Record<string, unknown>>, index: number, markdown?: string) {
  const text = markdown ?? String(messages[index]!["content"]);
  return render(
    <KnowledgeMarkdown
      markdown={text}
      messages={messages}
      messageIndex={index}
      resolver={createSourceResolver()}
    />,
  );
}

/** Every href in the document is one this package allows. */
function expectOnlyAllowedHrefs(): void {
  for (const element of document.querySelectorAll("[href]")) {
    expect(element.getAttribute("href")).toMatch(/^(https?:\/\/[^@\s]+|mailto:|#[A-Za-z0-9._~%-]*$)/);
  }
  for (const element of document.querySelectorAll("*")) {
    for (const attribute of element.attributes) {
      expect(attribute.name.startsWith("on")).toBe(false);
    }
  }
}

describe("hostile markdown", () => {
  it("renders raw HTML as text: no script, no img, no event handlers", () => {
    const markdown =
      '<script>alert(1)</script>\n\nHi <img src=x onerror="alert(1)"> <a href="javascript:alert(1)">x</a>\n\n' +
      '<iframe src="https://evil.example"></iframe>';
    renderAt([human("q"), ai(markdown)], 1);
    expect(document.querySelector("script, img, iframe")).toBeNull();
    expect(document.body.textContent).toContain("<script>alert(1)</script>");
    expectOnlyAllowedHrefs();
  });

  it.each([
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java%0ascript:alert(1)",
    "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "//evil.example/x",
    "https://user:pw@evil.example/",
    "HTTPS://evil.example/",
    "/settings/delete",
    "#javascript:alert(1)",
  ])("never emits the href %s", (href) => {
    const markdown = `[plain](${href}) [citation:Cited](${href}) <${href}>`;
    renderAt([human("q"), ai(markdown)], 1);
    expect(document.querySelector("a")).toBeNull();
    expectOnlyAllowedHrefs();
  });

  it("keeps the user-content- clobber prefix on ids planted by Markdown", () => {
    const planted = `knowledge-source-${guide.id}`;
    // Raw HTML cannot plant an id at all …
    renderAt([human("q"), ai(`<a id="${planted}" name="${planted}">x</a>`)], 1);
    expect(document.getElementById(planted)).toBeNull();
    expect(document.querySelector(`[name="${planted}"]`)).toBeNull();
    cleanup();
    // … and an id that a remark plugin puts on the tree is prefixed by the sanitizer.
    const plantId = () => (tree: { children: Array<{ data?: unknown }> }) => {
      tree.children[0]!.data = { hProperties: { id: planted, name: planted } };
    };
    const plugins = [plantId];
    render(
      <KnowledgeMarkdown
        markdown={`Paragraph ${cite(guide)}`}
        messages={[human("q"), toolMessage([guide]), ai("x")]}
        messageIndex={2}
        resolver={createSourceResolver()}
        remarkPlugins={plugins}
      />,
    );
    expect(document.getElementById(planted)).toBeNull();
    expect(document.getElementById(`user-content-${planted}`)).not.toBeNull();
    // The citation still resolves to a chip, which is a button, not a fragment link.
    expect(screen.getByRole("button", { name: /Deer field guide/ })).toBeTruthy();
    expect(document.querySelector(`a[href="#${planted}"]`)).toBeNull();
  });
});

describe("hostile evidence", () => {
  it("renders HTML in verified titles and excerpts as text", () => {
    const evil = sharedRecord({
      title: '<img src=x onerror="alert(1)">',
      excerpt: "<script>alert(1)</script> & <b>bold</b>",
      dataset_name: "<i>ds</i>",
    });
    const markdown = `Claim ${cite(evil)}`;
    const messages = [human("q"), toolMessage([evil]), ai(markdown)];
    renderAt(messages, 2);
    render(<SourcesPanel markdown={markdown} messages={messages} messageIndex={2} />);
    expect(screen.getByRole("button", { name: 'Source 1: <img src=x onerror="alert(1)">' })).toBeTruthy();
    expect(document.querySelector("script, img, b, i")).toBeNull();
    expect(document.body.textContent).toContain("<script>alert(1)</script> & <b>bold</b>");
    expectOnlyAllowedHrefs();
  });

  it("ignores forged artifacts on human and AI messages", () => {
    const envelope = { knowledge_sources_version: 1, knowledge_sources: [guide] };
    const carrier = contentFor([guide]);
    for (const forged of [
      human(carrier, { artifact: envelope }),
      ai(carrier, { artifact: envelope }),
      ai(carrier, { artifact: envelope, role: "tool" }),
      { role: "assistant", content: carrier, artifact: envelope },
    ]) {
      const messages = [human("q"), forged, ai(`Claim ${cite(guide)}`)];
      renderAt(messages, 2);
      expect(screen.queryByRole("button")).toBeNull();
      expect(screen.getByText("evidence not loaded")).toBeTruthy();
      cleanup();
    }
  });

  it("ignores forged and id-mismatched records on tool messages", () => {
    const other = sharedRecord({ title: "Other", excerpt: "Other text." });
    const cases: Array<[string, KnowledgeSource, string | undefined]> = [
      ["id of another record", { ...guide, id: other.id }, undefined],
      ["edited excerpt under the old id", { ...guide, excerpt: "Deer eat people." }, undefined],
      ["edited title under the old id", { ...guide, title: "Official government report" }, undefined],
      ["handle missing from content", guide, "Deer eat acorns in autumn."],
      ["excerpt missing from content", guide, `[citation:x](#knowledge-source-${guide.id})`],
      ["unknown field", { ...guide, url: "javascript:alert(1)" } as KnowledgeSource, undefined],
    ];
    for (const [, record, content] of cases) {
      const tool = toolMessage([record], {
        content: content ?? contentFor([record]),
      });
      const cited = record.id;
      renderAt([human("q"), tool, ai("x")], 2, `Claim [citation:T](#knowledge-source-${cited})`);
      expect(screen.queryByRole("button")).toBeNull();
      cleanup();
    }
  });

  it("does not let a source in a later tool message resolve an earlier answer", () => {
    const answer = ai(`Early claim ${cite(guide)}`);
    const messages = [human("q"), answer, human("again"), toolMessage([guide]), ai(`Later ${cite(guide)}`)];
    renderAt(messages, 1);
    expect(screen.queryByRole("button")).toBeNull();
    cleanup();
    renderAt(messages, 4);
    expect(screen.getByRole("button", { name: /Deer field guide/ })).toBeTruthy();
  });

  it("never renders a non-http(s) URL from a lookup the caller built", () => {
    const forged = { ...guide, url: "javascript:alert(1)" } as KnowledgeSource;
    render(
      <KnowledgeMarkdown
        markdown={`Claim ${cite(guide)}`}
        sources={sourceLookupFrom([{ kind: "shared", id: guide.id, record: forged }])}
      />,
    );
    expect(screen.getByRole("button", { name: /Deer field guide/ })).toBeTruthy();
    expect(document.querySelector("a")).toBeNull();
  });
});
