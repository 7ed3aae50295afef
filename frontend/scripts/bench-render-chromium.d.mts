// Types of bench-render-chromium.mjs for the test that keeps the bench from silently breaking.
import type { Browser, Page } from "playwright-core";

import type { Variant } from "./bench-render-browser.mjs";

export declare const CHROMIUM: string;
export declare function bundleBench(): Promise<string>;
export declare function openBenchPage(
  script: string,
  options?: { readonly stylesheet?: boolean },
): Promise<{ browser: Browser; page: Page }>;
export declare function threadTimes(page: Page): Promise<{
  read(): Promise<Record<"TaskDuration" | "RecalcStyleDuration" | "LayoutDuration", number>>;
  detach(): Promise<void>;
}>;
export declare function cpuTimes(
  page: Page,
  options: { readonly turns: number; readonly sourcesPerTool: number; readonly runs: number },
): Promise<{
  times: Record<Variant, number[]>;
  medians: Record<Variant, number>;
  layout: Record<Variant, number>;
  toFloor: Record<"full" | "noPanel" | "glue", number>;
}>;
export declare const RUN_ORDER: readonly Variant[];
