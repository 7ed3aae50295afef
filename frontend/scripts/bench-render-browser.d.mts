// Types of bench-render-browser.mjs for the test that keeps the bench from silently breaking.
export type Variant = "full" | "noPanel" | "glue" | "floor" | "plain";
export interface DomSize {
  readonly elements: number;
  readonly attributes: number;
  readonly text: number;
}
export interface BenchOptions {
  readonly turns: number;
  readonly sourcesPerTool: number;
}
export interface BenchRun {
  readonly messages: number;
  readonly times: Record<Variant, number[]>;
  readonly medians: Record<Variant, number>;
  readonly layout: Record<Variant, number>;
  readonly dom: Record<Variant, DomSize>;
  readonly gc: boolean;
}
export declare const VARIANTS: Record<Variant, unknown>;
export declare function domCounts(options: BenchOptions): Record<Variant, DomSize & { readonly chips: number }>;
export declare function run(options: BenchOptions & { readonly runs: number }): BenchRun;
export declare function prepare(options: BenchOptions): void;
export declare function mountOne(variant: Variant): number;
export declare function unmountLast(): void;
export declare const RUN_ORDER: readonly Variant[];
export declare function chipSemantics(
  options: BenchOptions,
): Record<"full" | "glue" | "floor", [string | null, string | null, string | null][]>;
