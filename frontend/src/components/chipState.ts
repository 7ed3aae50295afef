/**
 * The open-preview state of a group of chips (one message), held once for the group instead of
 * once per chip: a thread of many cited messages mounts no hook, ref or listener per chip. The
 * chips are found from the events themselves (delegation on the group's element), so a closed chip
 * is plain DOM. At most one chip of a group is open: the one last hovered, focused or pinned.
 */

import {
  useMemo,
  useRef,
  useState,
  type FocusEvent,
  type KeyboardEvent,
  type MouseEvent,
} from "react";

const HOVERED = 1;
const FOCUSED = 2;
const PINNED = 4;
const DISMISSED = 8;

/** Which chip of the group (its index in document order, -1 none) and why it is open. */
export interface ChipState {
  readonly index: number;
  readonly flags: number;
}

export const NO_CHIP: ChipState = Object.freeze({ index: -1, flags: 0 });

/** The index of the open chip, or -1. */
export function openChip(state: ChipState): number {
  const open = (state.flags & DISMISSED) === 0 && (state.flags & (HOVERED | FOCUSED | PINNED)) !== 0;
  return open ? state.index : -1;
}

/** True when the open chip was pinned (click or Enter): its preview's link joins the tab order. */
export const isPinned = (state: ChipState): boolean => (state.flags & PINNED) !== 0;

/** The delegated handlers: put them on an element holding every chip and the open preview. */
export interface ChipHandlers {
  onMouseOver(event: MouseEvent<HTMLElement>): void;
  onMouseOut(event: MouseEvent<HTMLElement>): void;
  onFocus(event: FocusEvent<HTMLElement>): void;
  onBlur(event: FocusEvent<HTMLElement>): void;
  onClick(event: MouseEvent<HTMLElement>): void;
  onKeyDown(event: KeyboardEvent<HTMLElement>): void;
}

export interface ChipGroup {
  readonly state: ChipState;
  readonly handlers: ChipHandlers;
  /** Closes the open preview until the pointer or focus comes back (Escape anywhere). */
  readonly dismiss: () => void;
  /** The chip element at `index` (document order), if it is mounted. */
  readonly chipAt: (index: number) => HTMLElement | null;
}

// Closing a chip that is not the open one changes nothing (it closed when another one opened).
function update(prev: ChipState, index: number, set: number, clear: number): ChipState {
  if (prev.index !== index && set === 0) return prev;
  const flags = ((prev.index === index ? prev.flags : 0) | set) & ~clear;
  return flags === prev.flags && index === prev.index ? prev : { index, flags };
}

/**
 * The state of the chips that `chips()` lists (in document order; the elements carry class
 * `dk-chip`) whose preview, while open, has id `previewId`.
 */
export function useChipGroup(previewId: string, chips: () => ArrayLike<Element>): ChipGroup {
  const [state, setState] = useState(NO_CHIP);
  // The handlers are made once; they read the chips and the open index at event time.
  const live = useRef({ state, chips });
  live.current = { state, chips };
  const parts = useMemo(() => {
    const chipAt = (index: number): HTMLElement | null => {
      const element = index < 0 ? undefined : live.current.chips()[index];
      return element instanceof HTMLElement ? element : null;
    };
    // The chip an event target belongs to: a chip (or inside one), or inside the open preview.
    const locate = (target: EventTarget | null): number => {
      if (!(target instanceof Element)) return -1;
      const chip = target.closest(".dk-chip");
      if (chip !== null) return Array.prototype.indexOf.call(live.current.chips(), chip);
      const preview = target.closest(".dk-preview");
      return preview !== null && preview.id === previewId ? live.current.state.index : -1;
    };
    const set = (index: number, on: number, off: number): void => {
      if (index >= 0) setState((prev) => update(prev, index, on, off));
    };
    const dismiss = (): void => setState((prev) => update(prev, prev.index, DISMISSED, PINNED));
    const handlers: ChipHandlers = {
      onMouseOver: (event) => {
        const index = locate(event.target);
        if (index >= 0 && locate(event.relatedTarget) !== index) set(index, HOVERED, DISMISSED);
      },
      onMouseOut: (event) => {
        const index = locate(event.target);
        if (index >= 0 && locate(event.relatedTarget) !== index) set(index, 0, HOVERED);
      },
      onFocus: (event) => {
        const index = locate(event.target);
        if (index >= 0 && locate(event.relatedTarget) !== index) set(index, FOCUSED, DISMISSED);
      },
      onBlur: (event) => {
        const index = locate(event.target);
        if (index >= 0 && locate(event.relatedTarget) !== index) set(index, 0, FOCUSED | PINNED);
      },
      onClick: (event) => {
        const chip = event.target instanceof Element ? event.target.closest(".dk-chip") : null;
        const index = chip === null ? -1 : locate(chip);
        if (index < 0) return;
        setState((prev) => {
          const flags = prev.index === index ? prev.flags : 0;
          return { index, flags: (flags ^ PINNED) & ~DISMISSED };
        });
      },
      onKeyDown: (event) => {
        if (event.key !== "Escape") return;
        const index = locate(event.target);
        if (index < 0 || openChip(live.current.state) !== index) return;
        event.stopPropagation();
        dismiss();
        const chip = chipAt(index);
        if (chip !== null && event.target !== chip) chip.focus();
      },
    };
    return { handlers, dismiss, chipAt };
  }, [previewId]);
  return { state, ...parts };
}
