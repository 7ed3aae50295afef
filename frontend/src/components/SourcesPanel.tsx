/**
 * The distinct verified sources one assistant message cites, in first-citation order, found by
 * scanning the message's Markdown (for hosts that render with `KnowledgeMarkdown` or no renderer
 * of theirs; the glue's `KnowledgeSourcesPanel` takes the citations its links found instead).
 */

import { memo, useMemo, type ReactElement } from "react";

import type { SourceLookup } from "../lookup.js";
import { citationsOf } from "../citationMemo.js";
import { countCitations, summarizeCitations } from "../summary.js";
import { distinguishSources } from "./distinguish.js";
import { mergeLabels, type KnowledgeLabels } from "./labels.js";
import { markdownOf } from "./messageText.js";
import { PanelView } from "./PanelView.js";
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
  const citations = citationsOf(markdown);
  const counts = useMemo(() => countCitations(citations, lookup), [citations, lookup]);
  const labels = useMemo(() => mergeLabels(partialLabels), [partialLabels]);
  // Only an open panel lists sources (and tells apart those of one title): a closed one is its
  // count alone.
  const list = useMemo(
    () => () => {
      const { sources } = summarizeCitations(citations, lookup);
      return { sources, suffixes: distinguishSources(sources, labels) };
    },
    [citations, lookup, labels],
  );
  return (
    <PanelView
      count={counts.sources}
      list={list}
      unresolved={counts.unresolved}
      malformed={counts.malformed}
      defaultOpen={defaultOpen}
      className={className}
      labels={labels}
    />
  );
});
