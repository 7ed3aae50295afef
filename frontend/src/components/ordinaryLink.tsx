/**
 * An ordinary (non-citation) link as this package draws it: a link only when its address passes
 * the allowlist (`url.ts`), external ones opening in a new tab; otherwise its text, marked.
 */

import type { Key, ReactElement, ReactNode } from "react";

import { EXTERNAL_LINK_REL, classifyHref } from "../url.js";
import type { KnowledgeLabels } from "./labels.js";

export function ordinaryLink(
  href: string | undefined,
  labels: KnowledgeLabels,
  children: ReactNode,
  key: Key | undefined,
): ReactElement {
  const safe = classifyHref(href);
  if (safe === null) {
    return (
      <span key={key} className="dk-link-blocked" title={labels.linkBlocked}>
        {children}
      </span>
    );
  }
  if (safe.kind === "external") {
    return (
      <a key={key} className="dk-link" href={safe.href} target="_blank" rel={EXTERNAL_LINK_REL}>
        {children}
        <span className="dk-sr-only"> {labels.opensInNewTab}</span>
      </a>
    );
  }
  return (
    <a key={key} className="dk-link" href={safe.href}>
      {children}
    </a>
  );
}
