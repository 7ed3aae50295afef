// Test-only CommonJS packages without bundled types.
declare module "commonmark-spec" {
  export interface SpecExample {
    readonly markdown: string;
    readonly html: string;
    readonly section: string;
    readonly number: number;
  }
  export const tests: readonly SpecExample[];
  const spec: { readonly tests: readonly SpecExample[]; readonly text: string };
  export default spec;
}

declare module "mdurl" {
  export function encode(value: string): string;
}
