/**
 * Where a chip's preview goes: below the chip when it fits, else above, else beside it, always
 * inside the visible part of the scrolling message list and clear of the areas the page keeps
 * clear (the Sources toggles, an input box marked `data-dk-keep-clear`).
 */

export interface Box {
  readonly left: number;
  readonly top: number;
  readonly right: number;
  readonly bottom: number;
}

export type Placement = "below" | "above" | "right" | "left";

export interface PlacedPreview {
  readonly placement: Placement;
  readonly left: number;
  readonly top: number;
}

/** The order the placements are tried in. */
export const PLACEMENT_ORDER: readonly Placement[] = Object.freeze(["below", "above", "right", "left"]);

const clamp = (value: number, low: number, high: number): number =>
  Math.max(low, Math.min(value, Math.max(low, high)));

const overlaps = (a: Box, b: Box): boolean =>
  a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;

const inside = (a: Box, bound: Box): boolean =>
  a.left >= bound.left && a.top >= bound.top && a.right <= bound.right && a.bottom <= bound.bottom;

function candidate(placement: Placement, anchor: Box, width: number, height: number, bound: Box): Box {
  let left: number;
  let top: number;
  switch (placement) {
    case "below":
      top = anchor.bottom;
      left = clamp(anchor.left, bound.left, bound.right - width);
      break;
    case "above":
      top = anchor.top - height;
      left = clamp(anchor.left, bound.left, bound.right - width);
      break;
    case "right":
      left = anchor.right;
      top = clamp(anchor.top, bound.top, bound.bottom - height);
      break;
    case "left":
      left = anchor.left - width;
      top = clamp(anchor.top, bound.top, bound.bottom - height);
      break;
  }
  return { left, top, right: left + width, bottom: top + height };
}

/**
 * The first placement (below, above, right, left) whose box lies inside `bound` and overlaps no
 * box in `keepClear`. When none does, the one with the fewest overlaps among those inside the
 * bound, else below or above (whichever has more room), pushed inside the bound as far as it goes.
 * The preview touches the chip (no gap), so the pointer can move from one to the other.
 */
export function placePreview(
  anchor: Box,
  size: { readonly width: number; readonly height: number },
  bound: Box,
  keepClear: readonly Box[] = [],
): PlacedPreview {
  let best: { placement: Placement; box: Box; hits: number } | null = null;
  for (const placement of PLACEMENT_ORDER) {
    const box = candidate(placement, anchor, size.width, size.height, bound);
    if (!inside(box, bound)) continue;
    let hits = 0;
    for (const clear of keepClear) if (overlaps(box, clear)) hits += 1;
    if (hits === 0) return { placement, left: box.left, top: box.top };
    if (best === null || hits < best.hits) best = { placement, box, hits };
  }
  if (best !== null) return { placement: best.placement, left: best.box.left, top: best.box.top };
  const placement: Placement = bound.bottom - anchor.bottom >= anchor.top - bound.top ? "below" : "above";
  const box = candidate(placement, anchor, size.width, size.height, bound);
  return {
    placement,
    left: box.left,
    top: clamp(box.top, bound.top, bound.bottom - size.height),
  };
}
