/**
 * The sources panel's view, from what one message cites (however that was found): shared by
 * `SourcesPanel` (which scans the Markdown) and `KnowledgeSourcesPanel` (which reads the links
 * the host's renderer drew).
 *
 * A transcript mounts one panel per answer and most stay closed, so a closed panel is its toggle
 * alone, drawn from three counts: the list, the per-source display work and the suffixes that
 * tell sources apart are asked for (`list`) only by the open body.
 */

import { memo, useId, useMemo, useState, type ReactElement } from "react";

import type { ResolvedSource } from "../lookup.js";
import { describeSource } from "../resolve.js";
import { SourceDetails } from "./CitationChip.js";
import type { KnowledgeLabels } from "./labels.js";

/** What an open panel lists: the verified sources in number order, and their suffixes by id. */
export interface PanelList {
  readonly sources: readonly ResolvedSource[];
  readonly suffixes: ReadonlyMap<string, string>;
}

interface PanelViewProps {
  /** Distinct verified sources cited (the toggle's count; `list().sources.length`). */
  readonly count: number;
  /** The sources and their suffixes; called only while the panel is open. */
  readonly list: () => PanelList;
  readonly unresolved: number;
  readonly malformed: number;
  readonly defaultOpen: boolean;
  readonly className: string | undefined;
  readonly labels: KnowledgeLabels;
}

/** The panel itself, from what the message cites (however that was found). */
export const PanelView = /* @__PURE__ */ memo(function PanelView({
  count,
  list,
  unresolved,
  malformed,
  defaultOpen,
  className: extraClass,
  labels,
}: PanelViewProps): ReactElement | null {
  const [open, setOpen] = useState(defaultOpen);
  const bodyId = `dk-sources-${useId()}`;
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
        <PanelBody id={bodyId} list={list} unresolved={unresolved} malformed={malformed} labels={labels} />
      )}
    </section>
  );
});

interface PanelBodyProps {
  readonly id: string;
  readonly list: () => PanelList;
  readonly unresolved: number;
  readonly malformed: number;
  readonly labels: KnowledgeLabels;
}

/** The open panel's list and notes (mounted only while open). */
function PanelBody({ id, list: listOf, unresolved, malformed, labels }: PanelBodyProps): ReactElement {
  const { sources, suffixes } = useMemo(listOf, [listOf]);
  return (
    <div id={id} className="dk-sources-body">
      {sources.length > 0 && (
        <ol className="dk-sources-list">
          {sources.map((source, index) => {
            const display = describeSource(source);
            return (
              <li key={source.id} className="dk-source" data-dk-kind={display.kind} data-dk-source-id={display.id}>
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
  );
}
