import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { placePreview, type Box } from "../../src/components/placement.js";

const bound: Box = { left: 0, top: 0, right: 1000, bottom: 800 };
const size = { width: 300, height: 200 };
const chipAt = (left: number, top: number): Box => ({ left, top, right: left + 80, bottom: top + 20 });

describe("placePreview", () => {
  it("goes below when it fits", () => {
    expect(placePreview(chipAt(100, 100), size, bound)).toEqual({ placement: "below", left: 100, top: 120 });
  });

  it("flips above when there is no room below (the input box is outside the bound)", () => {
    expect(placePreview(chipAt(100, 700), size, bound)).toEqual({ placement: "above", left: 100, top: 500 });
  });

  it("goes beside when neither above nor below fits", () => {
    const tall = { width: 300, height: 500 };
    expect(placePreview(chipAt(100, 350), tall, bound).placement).toBe("right");
    expect(placePreview(chipAt(800, 350), tall, bound).placement).toBe("left");
  });

  it("never covers a box to keep clear (a Sources toggle under the chip)", () => {
    const toggle: Box = { left: 0, top: 140, right: 200, bottom: 160 };
    expect(placePreview(chipAt(100, 300), size, bound, [toggle]).placement).toBe("below");
    const under: Box = { left: 0, top: 330, right: 200, bottom: 350 };
    expect(placePreview(chipAt(100, 300), size, bound, [under])).toEqual({ placement: "above", left: 100, top: 100 });
  });

  it("shifts left to stay inside the bound", () => {
    expect(placePreview(chipAt(900, 100), size, bound)).toEqual({ placement: "below", left: 700, top: 120 });
  });

  it("always stays inside the bound when the preview fits in it", () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 920 }),
        fc.integer({ min: 0, max: 780 }),
        fc.integer({ min: 10, max: 1000 }),
        fc.integer({ min: 10, max: 800 }),
        (left, top, width, height) => {
          const placed = placePreview(chipAt(left, top), { width, height }, bound);
          expect(placed.left).toBeGreaterThanOrEqual(bound.left);
          expect(placed.top).toBeGreaterThanOrEqual(bound.top);
          expect(placed.left + width).toBeLessThanOrEqual(bound.right);
          expect(placed.top + height).toBeLessThanOrEqual(bound.bottom);
        },
      ),
    );
  });
});
