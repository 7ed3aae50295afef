/**
 * The runtime import graph of a source module, read with the TypeScript parser: every module a
 * bundle or node would load from it. `import type` / `export type` declarations are erased; any
 * other import counts (under `verbatimModuleSyntax`, `import { type X }` still loads its module).
 */

import { existsSync, readFileSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

import ts from "typescript";

const SRC = fileURLToPath(new URL("../src/", import.meta.url));

export interface ImportGraph {
  /** Source files reached, relative to src/ (e.g. `envelope.ts`). */
  readonly files: readonly string[];
  /** Bare specifiers (packages) reached, sorted. */
  readonly packages: readonly string[];
}

function runtimeSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest);
  const found: string[] = [];
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      if (statement.importClause?.isTypeOnly === true) continue;
      found.push((statement.moduleSpecifier as ts.StringLiteral).text);
    } else if (ts.isExportDeclaration(statement) && statement.moduleSpecifier !== undefined) {
      if (statement.isTypeOnly) continue;
      found.push((statement.moduleSpecifier as ts.StringLiteral).text);
    }
  }
  // A dynamic import() or require() would escape the walk: refuse them rather than miss one.
  const walk = (node: ts.Node): void => {
    const callee = ts.isCallExpression(node) ? node.expression : null;
    const dynamic =
      callee !== null &&
      (callee.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(callee) && callee.text === "require"));
    if (dynamic) {
      throw new Error(`${relative(SRC, file)}: a dynamic import the graph cannot follow`);
    }
    ts.forEachChild(node, walk);
  };
  walk(source);
  return found;
}

function resolveLocal(from: string, specifier: string): string {
  const base = join(dirname(from), specifier.replace(/\.js$/, ""));
  for (const candidate of [`${base}.ts`, `${base}.tsx`, join(base, "index.ts")]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`${relative(SRC, from)}: cannot resolve ${specifier}`);
}

/** The graph reached from `entry` (a path relative to src/). */
export function importGraph(entry: string): ImportGraph {
  const files = new Set<string>();
  const packages = new Set<string>();
  const pending = [join(SRC, entry)];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (files.has(file)) continue;
    files.add(file);
    for (const specifier of runtimeSpecifiers(file)) {
      if (specifier.startsWith(".")) pending.push(resolveLocal(file, specifier));
      else packages.add(specifier);
    }
  }
  return {
    files: [...files].map((file) => relative(SRC, file)).sort(),
    packages: [...packages].sort(),
  };
}
