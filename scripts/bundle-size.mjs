// The bundle's size as the budget counts it: every .wasm and .js file of a build that the page
// loads when it opens, raw and gzipped at level 9 (what a server's gzip sends). The failure
// worker's files, loaded only when a dropped file is a log or a dump, are counted apart
// (`on_demand_gzip`). Shared by the in-browser benchmark and the end-to-end test that holds
// the budget.
import { gzipSync } from "node:zlib";
import { readFileSync, readdirSync } from "node:fs";
import { extname, join } from "node:path";

/** The goal: the bundle, gzipped, in at most this many bytes (600 KB). */
export const BUNDLE_BUDGET_GZIP = 600_000;

/** The files only the failure worker loads (web/failure-worker.js and its wasm bundle). */
export const ON_DEMAND = /^(seqskew-failure|failure-worker)/;

export function bundle(dist) {
  const sizes = { wasm_bytes: 0, wasm_gzip: 0, js_bytes: 0, js_gzip: 0, on_demand_gzip: 0 };
  for (const name of readdirSync(dist)) {
    const kind = { ".wasm": "wasm", ".js": "js" }[extname(name)];
    if (!kind) continue;
    const bytes = readFileSync(join(dist, name));
    const gzip = gzipSync(bytes, { level: 9 }).length;
    if (ON_DEMAND.test(name)) {
      sizes.on_demand_gzip += gzip;
      continue;
    }
    sizes[`${kind}_bytes`] += bytes.length;
    sizes[`${kind}_gzip`] += gzip;
  }
  return { ...sizes, total_gzip: sizes.wasm_gzip + sizes.js_gzip };
}
