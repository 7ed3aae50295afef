/**
 * The sources panel of the glue: the citations one `KnowledgeMessage`'s links found as the host's
 * renderer drew them, with no parse of its own (and no Markdown scanner in the host's bundle).
 */

import { useMemo, useSyncExternalStore, type ReactElement } from "react";

import { CitationRegistry } from "./citationRegistry.js";
import { useMessageScope } from "./KnowledgeSources.js";
import { mergeLabels, type KnowledgeLabels } from "./labels.js";
import { PanelView } from "./PanelView.js";

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
  // The counts are the snapshot (a closed panel does no per-source work); a new counts object is
  // also the sign that the open list is to be read again. The subscription stays while closed:
  // the toggle's count follows a streaming message.
  const counts = useSyncExternalStore(registry.subscribe, () => registry.counts(), () => registry.counts());
  const merged = useMemo(
    () => (labels === undefined ? (scope?.labels ?? mergeLabels(undefined)) : mergeLabels(labels)),
    [labels, scope?.labels],
  );
  // `counts` is a new object whenever `cited()` is: the open list reads the registry afresh.
  const list = useMemo(() => () => registry.cited(), [counts, registry]);
  return (
    <PanelView
      count={counts.sources}
      list={list}
      unresolved={counts.unresolved}
      malformed={counts.malformed}
      defaultOpen={defaultOpen ?? true}
      className={className}
      labels={merged}
    />
  );
}
