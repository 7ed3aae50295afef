// Types of bench-render-chromium.mjs for the test that keeps the bench from silently breaking.
import type { Browser, Page } from "playwright-core";

export declare const CHROMIUM: string;
export declare function bundleBench(): Promise<string>;
export declare function openBenchPage(
  script: string,
  options?: { readonly stylesheet?: boolean },
): Promise<{ browser: Browser; page: Page }>;
