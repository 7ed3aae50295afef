/**
 * The renderer's view of the one Markdown cost guard (`../guard.ts`, where the rule, its budgets
 * and its single pass live): exported here too, where components have always imported it from.
 */

export {
  MAX_EMPHASIS_RUNS,
  MAX_INDENT_COLUMNS,
  MAX_NESTING_DEPTH,
  guardMarkdown,
  scanMarkdown,
  type GuardOptions,
  type GuardedMarkdown,
  type ScannedMarkdown,
} from "../guard.js";
