/**
 * The sources panel's view, from what one message cites (however that was found): shared by
 * `SourcesPanel` (which scans the Markdown) and `KnowledgeSourcesPanel` (which reads the links
 * the host's renderer drew).
 */

import { memo, useId, useMemo, useState, type ReactElement } from "react";

import type { ResolvedSource } from "../lookup.js";
import { describeSource } from "../resolve.js";
import { SourceDetails } from "./CitationChip.js";
import type { KnowledgeLabels } from "./labels.js";

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
export const PanelView = /* @__PURE__ */ memo(function PanelView({
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
