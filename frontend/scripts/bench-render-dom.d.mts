// Types of bench-render-dom.mjs for the test that keeps the bench from silently breaking.
export declare function domVariants(
  ours: string,
  plain: string,
): Record<"ours" | "noBadge" | "noDescriptions" | "noPanel" | "chipsAsLinks" | "plain", string>;
