// The bundles' sizes as the budgets count them, gzipped at level 9 (what a server's gzip sends),
// every .wasm and .js file of a build in one of three parts:
// - `first`: what the page loads to draw itself (boot.js, the page's bundle): the first bundle;
// - `worker`: the analysis worker's bundle (the importers, the analysis, the examples), which
//   the page starts once it has drawn itself, for the first visit's example and every drop;
// - `on_demand`: the failure worker's, loaded only when a dropped file is a log or a dump.
// `at_open_gzip` is what a first visit loads: the first bundle and the worker's.
// Shared by the in-browser benchmark and the end-to-end test that holds the budgets.
import { gzipSync } from "node:zlib";
import { readFileSync, readdirSync } from "node:fs";
import { extname, join } from "node:path";

/** The first bundle, gzipped, in at most this many bytes (560 KB). */
export const FIRST_BUDGET_GZIP = 560_000;

/** The first bundle and the analysis worker's together, gzipped (700 KB). */
export const AT_OPEN_BUDGET_GZIP = 700_000;

const PARTS = [
  ["on_demand", /^(seqskew-failure|failure-worker\.js$)/],
  ["worker", /^(seqskew-worker|worker\.js$)/],
  ["first", /./],
];

export function bundle(dist) {
  const sizes = {};
  for (const [part] of PARTS) {
    Object.assign(sizes, { [`${part}_wasm_bytes`]: 0, [`${part}_js_bytes`]: 0, [`${part}_gzip`]: 0 });
  }
  for (const name of readdirSync(dist)) {
    const kind = { ".wasm": "wasm", ".js": "js" }[extname(name)];
    if (!kind) continue;
    const [part] = PARTS.find(([, pattern]) => pattern.test(name));
    const bytes = readFileSync(join(dist, name));
    sizes[`${part}_${kind}_bytes`] += bytes.length;
    sizes[`${part}_gzip`] += gzipSync(bytes, { level: 9 }).length;
  }
  return { ...sizes, at_open_gzip: sizes.first_gzip + sizes.worker_gzip };
}
