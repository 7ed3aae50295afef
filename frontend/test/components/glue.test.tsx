// @vitest-environment jsdom
/**
 * The renderer-agnostic glue under react-markdown (the host parses; the package never does):
 * KnowledgeSources over the thread, KnowledgeMessage per message, KnowledgeLink as `components.a`
 * with the host's own link as fallback, KnowledgeSourcesPanel from the links' registry.
 */
import { act, cleanup, fireEvent, render, screen, within } from "@testing-library/react";
import fc from "fast-check";
import { StrictMode, memo, type ReactNode } from "react";
import Markdown, { type Components } from "react-markdown";
import rehypeSanitize from "rehype-sanitize";
import { afterEach, describe, expect, it } from "vitest";

import {
  KnowledgeLink,
  KnowledgeMessage,
  KnowledgeSources,
  KnowledgeSourcesPanel,
  classifyDestination,
  createSourceResolver,
  isKnowledgeHref,
  useKnowledgeSources,
  type KnowledgeLinkFallbackProps,
} from "../../src/index.js";
import { memoWork } from "../../src/citationMemo.js";
import { ai, cite, human, nativeRecord, nativeToolMessage, sharedRecord, toolMessage } from "./fixtures.js";

afterEach(cleanup);

const a = sharedRecord({ title: "Alpha", excerpt: "Alpha text.", page: 3 });
const b = sharedRecord({ title: "Beta", excerpt: "Beta text.", dataset_name: "Docs" });
const hex = "abcdefabcdefabcdefabcdefabcdef01";
const n = nativeRecord({ id: `${hex}-7`, text: "Native text.", document_name: "Handbook.pdf" });
const missing = { id: "0".repeat(32) };

/** The host's own link rendering (what DeerFlow's `a` override does for web links). */
function HostLink({ href, children }: KnowledgeLinkFallbackProps): ReactNode {
  return (
    <a className="host-link" href={href}>
      {children}
    </a>
  );
}

let parses = 0;
/** Counts react-markdown's parses (one remark transformer run per parse). */
const countParses = () => () => {
  parses += 1;
};
const REMARK = [countParses];
const COMPONENTS: Components = { a: (props) => <KnowledgeLink {...props} fallback={HostLink} /> };

function Thread({ messages, sanitize = false }: { messages: readonly Record<string, unknown>[]; sanitize?: boolean }) {
  return (
    <KnowledgeSources messages={messages} resolver={resolver}>
      {messages.map((message) =>
        message["type"] === "ai" ? (
          <article key={String(message["id"])} data-id={String(message["id"])}>
            <KnowledgeMessage message={message}>
              <Markdown remarkPlugins={REMARK} rehypePlugins={sanitize ? [rehypeSanitize] : []} components={COMPONENTS}>
                {String(message["content"])}
              </Markdown>
              <KnowledgeSourcesPanel />
            </KnowledgeMessage>
          </article>
        ) : null,
      )}
    </KnowledgeSources>
  );
}

let resolver = createSourceResolver();

function chipNames(scope: HTMLElement = document.body): string[] {
  return [...scope.querySelectorAll(".dk-chip")].map((chip) => chip.getAttribute("aria-label") ?? "");
}

describe("KnowledgeLink under react-markdown", () => {
  it("turns verified links into chips, the rest into inert labels, and hands other links back", () => {
    resolver = createSourceResolver();
    const answer = ai(
      `One ${cite(b, "the beta")} two ${cite(a)} again ${cite(b)} native [citation:1](#knowledge-${hex}-7) ` +
        `none ${cite(missing, "Old memo")} bad [citation:Bad](#knowledge-source-zz) ` +
        `web [citation:Site](https://example.com/page) and [a link](https://example.org).`,
    );
    render(<Thread messages={[human("q"), toolMessage([a, b]), nativeToolMessage([n]), answer]} />);
    expect(chipNames()).toEqual([
      "Source 1: Beta",
      "Source 2: Alpha",
      "Source 1: Beta",
      "Source 3: Handbook.pdf",
    ]);
    // The verified title, never the model's label.
    expect(document.body.textContent).not.toContain("the beta");
    const inert = [...document.querySelectorAll(".dk-inert")];
    expect(inert.map((label) => label.getAttribute("data-dk-reason"))).toEqual(["evidence_not_loaded", "bad_source_id"]);
    expect(inert[0]!.textContent).toContain("Old memo");
    // Web citations and ordinary links are the host's: its component, its classes.
    const host = [...document.querySelectorAll("a.host-link")];
    expect(host.map((link) => link.getAttribute("href"))).toEqual(["https://example.com/page", "https://example.org"]);
    expect(host[0]!.textContent).toBe("citation:Site");
    // The panel: the cited sources in chip order, the rest counted.
    const region = screen.getByRole("region", { name: "Sources" });
    const titles = within(region).getAllByRole("listitem").map((item) => item.querySelector(".dk-title")?.textContent);
    expect(titles).toEqual(["Beta", "Alpha", "Handbook.pdf"]);
    expect(region.textContent).toContain("1 cited source: evidence not loaded");
    expect(region.textContent).toContain("1 malformed citation");
  });

  it("opens a chip's preview with provider, excerpt and only the supplied locators", () => {
    resolver = createSourceResolver();
    render(<Thread messages={[human("q"), toolMessage([a, b]), ai(`x ${cite(b)}`)]} />);
    const chip = screen.getByRole("button", { name: "Source 1: Beta" });
    fireEvent.click(chip);
    expect(chip.getAttribute("aria-expanded")).toBe("true");
    const preview = document.getElementById(chip.getAttribute("aria-describedby")!)!;
    expect(preview.classList.contains("dk-preview")).toBe(true);
    expect(preview.textContent).toContain("Beta text.");
    expect(preview.textContent).toContain("Dataset: Docs");
    expect(preview.textContent).not.toContain("Page");
  });

  it("reads the sanitizer's #user-content- form as the same citation", () => {
    resolver = createSourceResolver();
    render(<Thread sanitize messages={[human("q"), toolMessage([a]), ai(`x ${cite(a)} and ${cite(missing)}`)]} />);
    expect(chipNames()).toEqual(["Source 1: Alpha"]);
    expect(document.querySelectorAll(".dk-inert[data-dk-reason=evidence_not_loaded]")).toHaveLength(1);
  });

  it("resolves only against the evidence before the message", () => {
    resolver = createSourceResolver();
    const early = ai(`too early ${cite(a)}`);
    render(<Thread messages={[human("q"), early, toolMessage([a]), ai(`late ${cite(a)}`)]} />);
    const [first, second] = [...document.querySelectorAll("article")] as HTMLElement[];
    expect(chipNames(first!)).toEqual([]);
    expect(first!.querySelector(".dk-inert")?.getAttribute("data-dk-reason")).toBe("evidence_not_loaded");
    expect(chipNames(second!)).toEqual(["Source 1: Alpha"]);
  });

  it("gives a forged tool message no chip", () => {
    resolver = createSourceResolver();
    const forged = toolMessage([a], { content: "no handle here" });
    render(<Thread messages={[human("q"), forged, ai(`x ${cite(a)}`)]} />);
    expect(chipNames()).toEqual([]);
    expect(document.querySelector(".dk-inert")?.getAttribute("data-dk-reason")).toBe("evidence_not_loaded");
  });

  it("outside a KnowledgeMessage: knowledge links are inert, other links the fallback's", () => {
    resolver = createSourceResolver();
    render(
      <KnowledgeSources messages={[toolMessage([a])]}>
        <Markdown components={COMPONENTS}>{`${cite(a)} [x](https://example.org)`}</Markdown>
      </KnowledgeSources>,
    );
    expect(chipNames()).toEqual([]);
    expect(document.querySelectorAll(".dk-inert")).toHaveLength(1);
    expect(document.querySelectorAll("a.host-link")).toHaveLength(1);
  });

  it("without a fallback draws other links through the package's allowlist", () => {
    render(<Markdown components={{ a: KnowledgeLink }}>{"[ok](https://example.org) [bad](javascript:alert(1))"}</Markdown>);
    expect(document.querySelector("a.dk-link")?.getAttribute("href")).toBe("https://example.org");
    expect(document.querySelectorAll("a")).toHaveLength(1);
  });

  it("parses each message once (the host's parse) and never on its own", () => {
    resolver = createSourceResolver();
    parses = 0;
    const finds = memoWork.finds;
    render(<Thread messages={[human("q"), toolMessage([a, b]), ai(`x ${cite(a)}`), ai(`y ${cite(b)} ${cite(a)}`)]} />);
    expect(parses).toBe(2);
    expect(memoWork.finds).toBe(finds);
    expect(screen.getAllByRole("region", { name: "Sources" })).toHaveLength(2);
  });
});

describe("numbering", () => {
  it("is the same under StrictMode's double render", () => {
    resolver = createSourceResolver();
    const messages = [human("q"), toolMessage([a, b]), nativeToolMessage([n]), ai(`x ${cite(b)} ${cite(a)} [citation:1](#knowledge-${hex}-7) ${cite(b)}`)];
    render(
      <StrictMode>
        <Thread messages={messages} />
      </StrictMode>,
    );
    expect(chipNames()).toEqual(["Source 1: Beta", "Source 2: Alpha", "Source 3: Handbook.pdf", "Source 1: Beta"]);
    const items = within(screen.getByRole("region", { name: "Sources" })).getAllByRole("listitem");
    expect(items.map((item) => item.querySelector(".dk-source-number")?.textContent)).toEqual(["1", "2", "3"]);
  });

  it("keeps its numbers while the message streams, and the panel follows", async () => {
    resolver = createSourceResolver();
    const base = [human("q"), toolMessage([a, b]), nativeToolMessage([n])];
    const texts = [`x ${cite(b)}`, `x ${cite(b)} then ${cite(a)}`, `x ${cite(b)} then ${cite(a)} and [citation:1](#knowledge-${hex}-7)`];
    const { rerender } = render(
      <StrictMode>
        <Thread messages={[...base, { type: "ai", id: "s", content: "x" }]} />
      </StrictMode>,
    );
    for (const text of texts) {
      await act(async () => {
        rerender(
          <StrictMode>
            <Thread messages={[...base, { type: "ai", id: "s", content: text }]} />
          </StrictMode>,
        );
      });
    }
    expect(chipNames()).toEqual(["Source 1: Beta", "Source 2: Alpha", "Source 3: Handbook.pdf"]);
    const region = screen.getByRole("region", { name: "Sources" });
    expect(region.textContent).toContain("Sources (3)");
  });

  it("turns an inert label into a chip when the evidence arrives", async () => {
    resolver = createSourceResolver();
    const answer = ai(`x ${cite(a)} ${cite(b)}`);
    const { rerender } = render(<Thread messages={[human("q"), toolMessage([b]), answer]} />);
    expect(chipNames()).toEqual(["Source 1: Beta"]);
    await act(async () => {
      rerender(<Thread messages={[human("q"), toolMessage([b]), toolMessage([a]), answer]} />);
    });
    // Numbered in citation order once both verify.
    expect(chipNames()).toEqual(["Source 1: Alpha", "Source 2: Beta"]);
    expect(screen.getByRole("region", { name: "Sources" }).textContent).toContain("Sources (2)");
  });

  it("never turns a chip back while the same message streams on (a trimmed window)", async () => {
    resolver = createSourceResolver();
    const tool = toolMessage([a]);
    const { rerender } = render(<Thread messages={[human("q"), tool, { type: "ai", id: "s", content: `x ${cite(a)}` }]} />);
    expect(chipNames()).toEqual(["Source 1: Alpha"]);
    await act(async () => {
      rerender(<Thread messages={[{ type: "ai", id: "s", content: `x ${cite(a)} more` }]} />);
    });
    expect(chipNames()).toEqual(["Source 1: Alpha"]);
    // Another message in the same place starts afresh.
    await act(async () => {
      rerender(<Thread messages={[{ type: "ai", id: "other", content: `x ${cite(a)}` }]} />);
    });
    expect(chipNames()).toEqual([]);
  });

  it("tells apart two cited sources of one document, on every chip", async () => {
    resolver = createSourceResolver();
    const one = sharedRecord({ title: "Manual", excerpt: "First part." });
    const two = sharedRecord({ title: "Manual", excerpt: "Second part." });
    await act(async () => {
      render(<Thread messages={[human("q"), toolMessage([one, two]), ai(`x ${cite(one)} y ${cite(two)}`)]} />);
    });
    expect(chipNames()).toEqual(["Source 1: Manual · excerpt 1", "Source 2: Manual · excerpt 2"]);
  });
});

/** Each chip's description, read the way assistive technology reads `aria-describedby`. */
function descriptions(scope: HTMLElement = document.body): string[] {
  return [...scope.querySelectorAll(".dk-chip")].map((chip) => {
    const target = document.getElementById(chip.getAttribute("aria-describedby") ?? "");
    return target === null ? "(none)" : `${target.hidden ? "hidden" : "shown"}: ${target.textContent}`;
  });
}

describe("chip descriptions", () => {
  it("are one hidden element per distinct description per message, not one per chip", () => {
    resolver = createSourceResolver();
    const c = sharedRecord({ title: "Gamma", excerpt: "Gamma text." });
    const cites = [c, a, c, b, c, c, a].map((record) => cite(record)).join(" and ");
    render(
      <StrictMode>
        <Thread messages={[human("q"), toolMessage([a, b, c]), ai(`x ${cites}`), ai(`y ${cite(c)} ${cite(c)}`)]} />
      </StrictMode>,
    );
    const [first, second] = [...document.querySelectorAll("article")] as HTMLElement[];
    expect(descriptions(first!)).toEqual([
      "hidden: local",
      "hidden: local, Page 3",
      "hidden: local",
      "hidden: local, Dataset: Docs",
      "hidden: local",
      "hidden: local",
      "hidden: local, Page 3",
    ]);
    // Three descriptions, three elements (not seven), each its own id in the document.
    expect(first!.querySelectorAll("[hidden]")).toHaveLength(3);
    expect(second!.querySelectorAll("[hidden]")).toHaveLength(1);
    expect(descriptions(second!)).toEqual(["hidden: local", "hidden: local"]);
    const ids = [...document.querySelectorAll("[hidden][id]")].map((element) => element.id);
    expect(new Set(ids).size).toBe(ids.length);
    // An open chip is described by its preview instead.
    const chip = within(first!).getAllByRole("button", { name: "Source 2: Alpha" })[0]!;
    fireEvent.click(chip);
    expect(document.getElementById(chip.getAttribute("aria-describedby")!)!.classList.contains("dk-preview")).toBe(true);
  });

  it("follow a streamed message: a new description arrives with its first chip", async () => {
    resolver = createSourceResolver();
    const base = [human("q"), toolMessage([a, b])];
    const { rerender } = render(<Thread messages={[...base, { type: "ai", id: "s", content: `x ${cite(a)}` }]} />);
    expect(descriptions()).toEqual(["hidden: local, Page 3"]);
    await act(async () => {
      rerender(<Thread messages={[...base, { type: "ai", id: "s", content: `x ${cite(a)} ${cite(b)} ${cite(a)}` }]} />);
    });
    expect(descriptions()).toEqual(["hidden: local, Page 3", "hidden: local, Dataset: Docs", "hidden: local, Page 3"]);
    expect(document.querySelectorAll("[hidden]")).toHaveLength(2);
  });
});

// Like streamdown: one memoized renderer per block, so an unchanged block never re-renders.
const Block = memo(function Block({ text }: { text: string }) {
  return <Markdown components={COMPONENTS}>{text}</Markdown>;
});

describe("a renderer that re-renders only the changed blocks", () => {
  it("updates chips and the panel that did not re-render", async () => {
    resolver = createSourceResolver();
    const one = sharedRecord({ title: "Manual", excerpt: "First part." });
    const two = sharedRecord({ title: "Manual", excerpt: "Second part." });
    const tool = toolMessage([one, two]);
    const view = (blocks: readonly string[]) => {
      const message = { type: "ai", id: "m", content: blocks.join("\n\n") };
      return (
        <KnowledgeSources messages={[human("q"), tool, message]} resolver={resolver}>
          <KnowledgeMessage message={message}>
            <KnowledgeSourcesPanel />
            {blocks.map((text, index) => (
              <Block key={index} text={text} />
            ))}
          </KnowledgeMessage>
        </KnowledgeSources>
      );
    };
    const { rerender } = render(view([`x ${cite(one)}`]));
    expect(chipNames()).toEqual(["Source 1: Manual"]);
    await act(async () => {
      rerender(view([`x ${cite(one)}`, `y ${cite(two)}`]));
    });
    // The first block did not re-render; its chip learnt its suffix from the registry.
    expect(chipNames()).toEqual(["Source 1: Manual · excerpt 1", "Source 2: Manual · excerpt 2"]);
    expect(screen.getByRole("region", { name: "Sources" }).textContent).toContain("Sources (2)");
  });
});

describe("useKnowledgeSources", () => {
  it("gives the evidence before a message, by object or id", () => {
    const tool = toolMessage([a]);
    const answer = ai("x");
    const messages = [human("q"), tool, answer];
    const seen: number[] = [];
    function Probe() {
      const sources = useKnowledgeSources();
      seen.push(sources.sourcesFor(answer).size, sources.sourcesFor(answer["id"]).size, sources.sourcesFor(tool).size);
      seen.push(sources.indexOf({ id: "nope" }));
      return null;
    }
    render(
      <KnowledgeSources messages={messages}>
        <Probe />
      </KnowledgeSources>,
    );
    expect(seen).toEqual([1, 1, 0, -1]);
  });
});

describe("isKnowledgeHref", () => {
  it("is necessary for every knowledge citation the contract's table names", () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (label, tail) => {
        for (const href of [tail, `#${tail}`, `#knowledge-${tail}`, `#knowledge-source-${tail}`]) {
          const found = classifyDestination(label, href);
          const knowledge = found !== null && (found.kind === "shared" || found.kind === "native" || found.reason === "bad_source_id");
          if (knowledge && !isKnowledgeHref(href)) return false;
        }
        return true;
      }),
    );
    expect(isKnowledgeHref(`#knowledge-source-${a.id}`)).toBe(true);
    expect(isKnowledgeHref(`#user-content-knowledge-${hex}-7`)).toBe(true);
    expect(isKnowledgeHref("https://example.com/#knowledge-source-x")).toBe(false);
    expect(isKnowledgeHref(undefined)).toBe(false);
  });

  it("leaves a host's href a string when it answers false (a type check: tsc fails otherwise)", () => {
    // DeerFlow's `a` override, shortened: after `if (isKnowledgeHref(href)) return …`, its own
    // `/mnt/` branch still reads `href` as a string. A `href is string` guard narrowed it to
    // `undefined` there, and DeerFlow's `next build` failed on `href?.startsWith`.
    function hostLink(href: string | undefined): string {
      if (isKnowledgeHref(href)) return `knowledge ${href.slice(1)}`;
      return href?.startsWith("/mnt/") ? "artifact" : "other";
    }
    expect(hostLink("/mnt/user-data/outputs/report.md")).toBe("artifact");
    expect(hostLink(`#knowledge-source-${a.id}`)).toBe(`knowledge knowledge-source-${a.id}`);
    expect(hostLink(undefined)).toBe("other");
  });
});
