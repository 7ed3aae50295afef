/**
 * The renderer's href allowlist: the one URL policy applied at every sink this package renders.
 *
 * rehype-sanitize and react-markdown's `defaultUrlTransform` already drop most dangerous schemes,
 * and React 19 neutralises `javascript:` — but neither is the policy of this package, and a chip
 * or a Sources panel renders URLs that never went through Markdown. So every `href` the components
 * emit passes one of these functions first; anything not explicitly allowed renders as text.
 *
 * Allowed:
 * * absolute `http:`/`https:` URLs matching the contract's URL grammar (contracts/README.md §1:
 *   lowercase scheme, a host, no userinfo, no white space, control character or backslash,
 *   at most 2,048 code points) — opened in a new tab with `rel="noopener noreferrer"`;
 * * `mailto:` addresses (ASCII, no white space, no quotes or angle brackets);
 * * same-document fragments `#…` made of unreserved characters and percent escapes (so a fragment
 *   cannot smuggle `javascript:`, `data:`, `vbscript:` or `file:` text to a hash handler).
 *
 * Everything else — other schemes (`javascript:`, `data:`, `vbscript:`, `file:` …), scheme-relative
 * `//host`, relative paths (which would let model output navigate the host application),
 * credentials in the authority — is refused.
 */

import { isValidUrl } from "./contract.js";

/** What an allowed href is. */
export type HrefKind = "external" | "mailto" | "fragment";

/** An href that passed the allowlist, with its kind (external links open in a new tab). */
export interface SafeHref {
  readonly kind: HrefKind;
  readonly href: string;
}

const MAILTO_RE = /^mailto:[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9.-]+(?:\?[A-Za-z0-9._~%=&+-]*)?$/;
const FRAGMENT_RE = /^#(?:[A-Za-z0-9._~-]|%[0-9A-Fa-f]{2})*$/;

/** The `rel` every external link this package renders carries. */
export const EXTERNAL_LINK_REL = "noopener noreferrer";

/**
 * An absolute `http`/`https` URL allowed as a link target (the contract's URL grammar), or null.
 */
export function safeExternalUrl(value: unknown): string | null {
  return isValidUrl(value) ? value : null;
}

/** `value` classified by the allowlist, or null when it must not be rendered as a link. */
export function classifyHref(value: unknown): SafeHref | null {
  if (typeof value !== "string" || value.length === 0) return null;
  if (value.startsWith("#")) {
    return FRAGMENT_RE.test(value) ? { kind: "fragment", href: value } : null;
  }
  if (value.startsWith("mailto:")) {
    return value.length <= 2_048 && MAILTO_RE.test(value) ? { kind: "mailto", href: value } : null;
  }
  const external = safeExternalUrl(value);
  return external === null ? null : { kind: "external", href: external };
}

/** True when `value` may be rendered as an `href` (see {@link classifyHref}). */
export function isSafeHref(value: unknown): value is string {
  return classifyHref(value) !== null;
}

/** The hostname of an allowed external URL (for display), or null. Never throws. */
export function displayHost(url: string): string | null {
  if (safeExternalUrl(url) === null) return null;
  try {
    return new URL(url).hostname || null;
  } catch {
    return null;
  }
}
