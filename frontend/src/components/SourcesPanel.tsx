/**
 * The distinct verified sources one assistant message cites, in first-citation order.
 */

import { memo, useId, useMemo, useState, useSyncExternalStore, type ReactElement } from "react";

import type { ResolvedSource, SourceLookup } from "../lookup.js";
import { describeSource, summarizeCitations } from "../resolve.js";
import { SourceDetails } from "./CitationChip.js";
import { CitationRegistry } from "./citationRegistry.js";
import { distinguishSources } from "./distinguish.js";
import { useMessageScope } from "./KnowledgeSources.js";
import { mergeLabels, type KnowledgeLabels } from "./labels.js";
import { markdownOf } from "./messageText.js";
import { useCitationLookup, type CitationSourceProps } from "./useCitationLookup.js";

export type SourcesPanelProps = CitationSourceProps & {
  /**
   * The assistant message's Markdown (the citations are read from it, outside code); default:
   * the text of `messages[messageIndex]`.
   */
  readonly markdown?: string | undefined;
  /** Whether the list starts expanded (default true). */
  readonly defaultOpen?: boolean | undefined;
  readonly className?: string | undefined;
  readonly labels?: Partial<KnowledgeLabels> | undefined;
};

/**
 * A collapsible list of the sources a message cites: only verified sources are listed (numbered
 * as the message's chips are); citations whose evidence is not in the loaded history are counted
 * as "evidence not loaded", malformed ones as malformed. Renders nothing when the message cites
 * nothing. Takes the same evidence props as `KnowledgeMarkdown`, and likewise re-renders only
 * when its Markdown or the evidence before its message changed. The list mounts only while the
 * panel is open (a closed panel is its toggle alone); two sources of one document are told apart
 * ("p. 3", "excerpt 2").
 */
export function SourcesPanel(props: SourcesPanelProps): ReactElement | null {
  const lookup = useCitationLookup(props);
  return (
    <PanelBody
      markdown={markdownOf(props)}
      lookup={lookup}
      defaultOpen={props.defaultOpen ?? true}
      className={props.className}
      labels={props.labels}
    />
  );
}

interface PanelBodyProps {
  readonly markdown: string;
  readonly lookup: SourceLookup;
  readonly defaultOpen: boolean;
  readonly className: string | undefined;
  readonly labels: Partial<KnowledgeLabels> | undefined;
}

// Pure: a host that renders only KnowledgeSourcesPanel (a host's own renderer found the
// citations) drops this and the Markdown scanner it needs from its bundle.
const PanelBody = /* @__PURE__ */ memo(function PanelBody({
  markdown,
  lookup,
  defaultOpen,
  className,
  labels: partialLabels,
}: PanelBodyProps): ReactElement | null {
  const summary = useMemo(() => summarizeCitations(markdown, lookup), [markdown, lookup]);
  const labels = useMemo(() => mergeLabels(partialLabels), [partialLabels]);
  // Only an open panel shows titles; a closed one needs no suffixes.
  const suffixes = useMemo(() => () => distinguishSources(summary.sources, labels), [summary, labels]);
  return (
    <PanelView
      sources={summary.sources}
      suffixes={suffixes}
      unresolved={summary.unresolved}
      malformed={summary.malformed}
      defaultOpen={defaultOpen}
      className={className}
      labels={labels}
    />
  );
});

export interface KnowledgeSourcesPanelProps {
  /** Whether the list starts expanded (default true). */
  readonly defaultOpen?: boolean | undefined;
  readonly className?: string | undefined;
  /** Translated strings (default: the enclosing `KnowledgeSources`' labels). Pass a stable object. */
  readonly labels?: Partial<KnowledgeLabels> | undefined;
}

const EMPTY_REGISTRY = new CitationRegistry();

/**
 * The sources panel of the enclosing `KnowledgeMessage`, from the citations its links already
 * found as they rendered (no parse of its own): the same list, numbers and notes as
 * `SourcesPanel`, updated as the message streams. Malformed citations are counted once per
 * distinct label and destination. Renders nothing while the message cites nothing (or outside a
 * `KnowledgeMessage`).
 */
export function KnowledgeSourcesPanel({ defaultOpen, className, labels }: KnowledgeSourcesPanelProps): ReactElement | null {
  const scope = useMessageScope();
  const registry = scope?.registry ?? EMPTY_REGISTRY;
  const cited = useSyncExternalStore(registry.subscribe, () => registry.cited(), () => registry.cited());
  const merged = useMemo(
    () => (labels === undefined ? (scope?.labels ?? mergeLabels(undefined)) : mergeLabels(labels)),
    [labels, scope?.labels],
  );
  const suffixes = useMemo(() => () => cited.suffixes, [cited]);
  return (
    <PanelView
      sources={cited.sources}
      suffixes={suffixes}
      unresolved={cited.unresolved}
      malformed={cited.malformed}
      defaultOpen={defaultOpen ?? true}
      className={className}
      labels={merged}
    />
  );
}

interface PanelViewProps {
  readonly sources: readonly ResolvedSource[];
  /** The suffixes telling apart sources of one title (asked for only while the panel is open). */
  readonly suffixes: () => ReadonlyMap<string, string>;
  readonly unresolved: number;
  readonly malformed: number;
  readonly defaultOpen: boolean;
  readonly className: string | undefined;
  readonly labels: KnowledgeLabels;
}

const NO_SUFFIXES: ReadonlyMap<string, string> = new Map();

/** The panel itself, from what the message cites (however that was found). */
const PanelView = memo(function PanelView({
  sources,
  suffixes: suffixesOf,
  unresolved,
  malformed,
  defaultOpen,
  className: extraClass,
  labels,
}: PanelViewProps): ReactElement | null {
  const [open, setOpen] = useState(defaultOpen);
  const suffixes = useMemo(() => (open ? suffixesOf() : NO_SUFFIXES), [open, suffixesOf]);
  const bodyId = `dk-sources-${useId()}`;
  const count = sources.length;
  if (count === 0 && unresolved === 0 && malformed === 0) return null;
  const className = extraClass === undefined ? "dk-sources" : `dk-sources ${extraClass}`;
  return (
    <section className={className} aria-label={labels.sources}>
      {/* A disclosure button, not <details>: closed, the panel is two elements. */}
      <button
        type="button"
        className="dk-sources-summary"
        aria-expanded={open}
        aria-controls={open ? bodyId : undefined}
        onClick={() => setOpen((value) => !value)}
      >
        {labels.sources} ({count})
      </button>
      {open && (
        <div id={bodyId} className="dk-sources-body">
          {count > 0 && (
            <ol className="dk-sources-list">
              {sources.map((source, index) => {
                const display = describeSource(source);
                return (
                  <li
                    key={source.id}
                    className="dk-source"
                    data-dk-kind={display.kind}
                    data-dk-source-id={display.id}
                  >
                    <span className="dk-source-number" aria-hidden="true">
                      {index + 1}
                    </span>
                    <span className="dk-source-body">
                      <SourceDetails display={display} labels={labels} suffix={suffixes.get(source.id)} />
                    </span>
                  </li>
                );
              })}
            </ol>
          )}
          {unresolved > 0 && (
            <p className="dk-sources-note" data-dk-reason="evidence_not_loaded">
              {labels.notLoadedCount(unresolved)}
            </p>
          )}
          {malformed > 0 && (
            <p className="dk-sources-note" data-dk-reason="malformed">
              {labels.malformedCount(malformed)}
            </p>
          )}
        </div>
      )}
    </section>
  );
});
