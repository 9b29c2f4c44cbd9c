// The bundle's size as the budget counts it: every .wasm and .js file of a build, raw and
// gzipped at level 9 (what a server's gzip sends). Shared by the in-browser benchmark and the
// end-to-end test that holds the budget.
import { gzipSync } from "node:zlib";
import { readFileSync, readdirSync } from "node:fs";
import { extname, join } from "node:path";

/** The goal: the bundle, gzipped, in at most this many bytes (600 KB). */
export const BUNDLE_BUDGET_GZIP = 600_000;

export function bundle(dist) {
  const sizes = { wasm_bytes: 0, wasm_gzip: 0, js_bytes: 0, js_gzip: 0 };
  for (const name of readdirSync(dist)) {
    const kind = { ".wasm": "wasm", ".js": "js" }[extname(name)];
    if (!kind) continue;
    const bytes = readFileSync(join(dist, name));
    sizes[`${kind}_bytes`] += bytes.length;
    sizes[`${kind}_gzip`] += gzipSync(bytes, { level: 9 }).length;
  }
  return { ...sizes, total_gzip: sizes.wasm_gzip + sizes.js_gzip };
}
