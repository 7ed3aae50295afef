// Types of bench-render-dom.mjs for the test that keeps the bench from silently breaking.
import type { Page } from "playwright-core";

export declare function captureDom(
  page: Page,
  options: { readonly turns: number; readonly sourcesPerTool: number },
): Promise<Record<"full" | "plain", string>>;
export declare function domVariants(
  ours: string,
  plain: string,
): Record<"ours" | "noBadge" | "noDescriptions" | "noPanel" | "chipsAsLinks" | "plain", string>;
