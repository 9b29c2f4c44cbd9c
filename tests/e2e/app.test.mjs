// End-to-end: the release build, served from a sub-path on 127.0.0.1, in headless Chromium.
// Every test fails on any request beyond the app's own assets (and the traces a test attaches
// under the same sub-path, as a wiki page would), and on any error on the page.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { join, resolve } from "node:path";
import { serve } from "../../scripts/static-server.mjs";
import { bundle, FIRST_BUDGET_GZIP, AT_OPEN_BUDGET_GZIP } from "../../scripts/bundle-size.mjs";
import { launch, guardedContext } from "./browser.mjs";

const DIST = process.env.SEQSKEW_DIST || "dist";
const SHOTS = process.env.SEQSKEW_SCREENSHOTS || "target/e2e-screenshots";
const FIXTURES = resolve(process.env.SEQSKEW_FIXTURES || "../shared/fixtures");
const BASE = "/wiki/tools/seqskew/";
const DP2 = join(FIXTURES, "pytorch-cpu-dp2");
// Others' real traces live beside the repository, never in it: a user's clone has none, and the
// tests that read them are skipped there, saying why.
// CI sets SEQSKEW_REQUIRE_FIXTURES: there a missing folder is a failure, not a skip.
const NO_SHARED = existsSync(FIXTURES) ? false : `needs the shared real traces at ${FIXTURES}, which this clone does not have beside it`;
if (NO_SHARED && process.env.SEQSKEW_REQUIRE_FIXTURES) throw new Error(NO_SHARED);

let server, browser;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(DIST, { base: BASE, mounts: { "attachments/": FIXTURES } });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the app; fails the test on page errors and outside requests. */
async function open(t, suffix = "") {
  const guard = await guardedContext(browser, server.url);
  const page = await guard.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(server.url + suffix);
  t.after(async () => {
    await guard.context.close();
    assert.deepEqual(guard.violations, [], "requests beyond the app's own assets");
    assert.deepEqual(errors, [], "errors on the page");
  });
  return { page, guard };
}

/** Waits until the verdict is for exactly these files; returns its cause. */
async function verdictFor(page, files) {
  const want = files.join(",");
  await page.waitForFunction((w) => document.querySelector("#verdict")?.dataset.files === w, want, { timeout: 90_000 });
  return page.locator("#verdict").getAttribute("data-cause");
}

function fixture(relative) {
  return { name: relative.split("/").pop(), bytes: readFileSync(join(FIXTURES, relative)) };
}

/** Bytes as base64, to cross into the page (an array of numbers takes seconds a megabyte). */
function base64(bytes) {
  return Buffer.from(bytes).toString("base64");
}

/** Drops files on the page with a real DataTransfer drop event. */
async function dropFiles(page, files) {
  const payload = files.map(({ name, bytes }) => ({ name, data: base64(bytes) }));
  const transfer = await page.evaluateHandle((items) => {
    const dt = new DataTransfer();
    for (const { name, data } of items) dt.items.add(new File([Uint8Array.from(atob(data), (c) => c.charCodeAt(0))], name));
    return dt;
  }, payload);
  await drop(page, transfer);
}

/** Dispatches a drag and drop of a DataTransfer (a handle to one in the page). */
async function drop(page, transfer) {
  for (const type of ["dragenter", "dragover", "drop"]) await page.dispatchEvent("main", type, { dataTransfer: transfer });
}

/** Fraction of a canvas's pixels that are not white or transparent. */
async function inked(page, selector) {
  return page.locator(selector).first().evaluate((c) => {
    const { data } = c.getContext("2d").getImageData(0, 0, c.width, c.height);
    let ink = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i + 3] > 0 && (data[i] < 245 || data[i + 1] < 245 || data[i + 2] < 245)) ink++;
    return ink / (data.length / 4);
  });
}

async function showView(page, id) {
  await page.click(`#tab-${id}`);
  await page.waitForSelector(`.view-${id}`);
  await page.waitForTimeout(300);
}

test("first visit: the example's verdict, every view drawn, from a sub-path, nothing requested outside", async (t) => {
  const { page, guard } = await open(t);
  assert.equal(await verdictFor(page, ["seqlen-imbalance.trace.json"]), "sequence_length_imbalance");
  assert.ok(guard.requests.some((r) => r.includes(`${BASE}seqskew-web_bg.wasm`)), "the bundle came from the sub-path");
  await page.waitForSelector("#chart-timeline canvas");
  assert.ok((await inked(page, "#chart-timeline canvas")) > 0.2, "the timeline is drawn");
  await page.screenshot({ path: join(SHOTS, "timeline.png"), fullPage: true });
  for (const [id, chart] of [["scatter", "#chart-max-vs-mean canvas"], ["heatmap", "#chart-heatmap canvas"], ["pipeline", "#chart-pipeline canvas"]]) {
    await showView(page, id);
    assert.ok((await inked(page, chart)) > 0.02, `${id} is drawn`);
    await page.screenshot({ path: join(SHOTS, `${id}.png`), fullPage: true });
  }
  assert.match(await page.url(), /#view=pipeline/, "the view is in the hash");
  // A chart's title says what its own numbers say (which of the two step time follows, if
  // either, with both correlations): the logic is unit-tested in seqskew-plot, this checks the
  // page shows the computed title rather than a fixed one.
  await showView(page, "scatter");
  assert.match(
    await page.locator("#chart-max-vs-mean h3").innerText(),
    /^Step time follows (the (longest document|mean length)|neither the longest document) \(r = -?\d\.\d\d\),? (not|nor) the (longest document|mean length) \(r = -?\d\.\d\d\)$/,
  );
  // The view opens on what the verdict weighs, the largest shard's cost, not on a feature it does not use.
  assert.equal(await page.locator("#view-panel [id^=chart-]").first().getAttribute("id"), "chart-step-time-scatter");
  assert.match(await page.locator("#chart-step-time-scatter h3").innerText(), /largest shard's Σ L²/);
  // Help beside the drop zone: what to drop, for each question.
  const help = page.locator("#drop-help");
  await help.locator("summary").click();
  for (const what of ["pt.trace.json", "step log", "nccl_trace_rank_N", "seqskew summarize"]) {
    assert.ok((await help.innerText()).includes(what), `the help names ${what}`);
  }
});

// The gallery's presets and the cause each was made with (crates/seqskew-sim/src/config.rs):
// the simulator shares the diagnosis's assumptions, so this guards the page's wiring and
// regressions, not accuracy on real jobs. "mixed" has two causes at once: either may lead.
const GALLERY = [
  ["seqlen-imbalance", ["sequence_length_imbalance"]],
  ["seqlen-balanced", ["balanced"]],
  ["slow-worker", ["slow_worker"]],
  ["stage-imbalance", ["pipeline_stage_imbalance"]],
  ["comm-bound", ["communication"]],
  ["gc-stalls", ["host_stall"]],
  ["balanced", ["balanced"]],
  ["mixed", ["sequence_length_imbalance", "slow_worker"]],
];

test("the gallery: an example job per cause, made in the page, each with the verdict it was made for; a link opens one", async (t) => {
  const { page, guard } = await open(t, "#example=slow-worker");
  assert.equal(await verdictFor(page, ["slow-worker.trace.json"]), "slow_worker", "the link's example is shown first");
  const gallery = page.locator("#gallery");
  await gallery.locator("summary").click();
  const listed = await gallery.locator("button[data-example]").evaluateAll((b) => b.map((x) => x.dataset.example));
  assert.deepEqual(listed, GALLERY.map(([name]) => name), "one button per preset");
  for (const [name, causes] of GALLERY) {
    await gallery.locator(`button[data-example="${name}"]`).click();
    const cause = await verdictFor(page, [`${name}.trace.json`]);
    assert.ok(causes.includes(cause), `${name}: ${cause}, made as ${causes.join(" or ")}`);
    assert.match(await page.url(), new RegExp(`#.*example=${name}(&|$)`), `${name} is in the link`);
  }
  // Dropped files are not an example: the link stops naming one.
  await dropFiles(page, [{ name: "steps.jsonl", bytes: Buffer.from([1, 2, 3].flatMap((step) => [0, 1].map((rank) => JSON.stringify({ step, rank, step_s: 1 + rank / 5 }))).join("\n")) }]);
  await verdictFor(page, ["steps.jsonl"]);
  assert.doesNotMatch(await page.url(), /example=/, "the dropped files' link names no example");
  assert.deepEqual(guard.violations, [], "nothing downloaded");
});

test("a link naming an example the page does not have says so", async (t) => {
  const { page } = await open(t, "#example=nope");
  await page.waitForSelector(".banner.error");
  assert.match(await page.locator(".banner.error").innerText(), /"nope", which this page does not have/);
});

test("dropping the random-batching fixture: sequence-length imbalance", { skip: NO_SHARED }, async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  const files = ["dp2-random/rank0.pt.trace.json.gz", "dp2-random/rank1.pt.trace.json.gz"].map((f) => fixture(`pytorch-cpu-dp2/${f}`));
  await dropFiles(page, files);
  assert.equal(await verdictFor(page, files.map((f) => f.name)), "sequence_length_imbalance");
  assert.match(await page.locator("#verdict .headline").innerText(), /longest documents/);
  // The worker's account of its time, for the user and the benchmark.
  const timing = page.locator(".timing");
  assert.equal(Number(await timing.getAttribute("data-bytes")), files.reduce((n, f) => n + f.bytes.length, 0));
  assert.ok(Number(await timing.getAttribute("data-read-ms")) >= 0 && Number(await timing.getAttribute("data-analysis-ms")) >= 0);
  assert.match(await timing.innerText(), /^Read and imported .* in \d+\.\d s( \(\d+ MiB\/s\))?( by \d workers)?, analysed in \d+\.\d s/);
  await page.screenshot({ path: join(SHOTS, "dp2-random.png"), fullPage: true });
});

test("the file picker with the slow-rank fixture: a slow worker", { skip: NO_SHARED }, async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  await page.setInputFiles("#file-input", ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"].map((f) => join(DP2, "dp2-balanced-slowrank1", f)));
  assert.equal(await verdictFor(page, ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"]), "slow_worker");
  assert.match(await page.locator("#verdict .headline").innerText(), /rank 1/);
});

test("two ranks of a 128-rank job: balanced among them only, with low confidence and what would tell", { skip: NO_SHARED }, async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  const files = ["sampled_rank-0.json.gz", "sampled_rank-1.json.gz"].map((f) => fixture(`hta_trace_filter/${f}`));
  await dropFiles(page, files);
  assert.equal(await verdictFor(page, files.map((f) => f.name)), "balanced");
  assert.equal(await page.locator("#verdict .confidence").innerText(), "low confidence");
  assert.match(await page.locator("#verdict .to-confirm").innerText(), /only 2 of the job's 128 ranks are loaded\): a rank that is not here/);
});

test("a broken file beside good ones: its problem is listed and the good ones are analysed", { skip: NO_SHARED }, async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  // Enough bytes to be shared among workers: the broken file's diagnostic comes back from
  // whichever worker read it, and the files keep the order they were dropped in.
  const good = ["rank0", "rank1"].map((r) => fixture(`pytorch-cpu-dp2/dp2-random/${r}.pt.trace.json.gz`));
  const broken = { name: "broken.json", bytes: Buffer.from('{"traceEvents": [') };
  await dropFiles(page, [good[0], broken, good[1]]);
  assert.equal(await verdictFor(page, [good[0].name, "broken.json", good[1].name]), "sequence_length_imbalance");
  // Named under the verdict it qualifies, with the way to every file.
  const problems = page.locator("#verdict .input-problems");
  assert.match(await problems.innerText(), /broken\.json.*ends before any trace events/);
  await problems.getByRole("button", { name: "See every file" }).click();
  await page.waitForSelector("#tab-files[aria-selected=true]");
  const table = await page.locator(".files table").innerText();
  assert.match(table, /PyTorch profiler \(Kineto\) trace/);
  // These traces' schedule annotates no pipeline passes: they name no micro-batches.
  assert.match(table, /Micro-batches[\s\S]*none named/);
  assert.match(await page.locator(".files .diagnostics").innerText(), /broken\.json.*ends before any trace events/);
  await page.screenshot({ path: join(SHOTS, "files.png"), fullPage: true });
});

test("a large drop is shared among workers: every file read once, the report in the order dropped", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  // Eight ranks' step logs of 8 MB each, made in the page (enough that an import worker has
  // started well before the analysis worker could read them all): rank r draws documents of
  // 100–8100 tokens, the longest on a different rank every step.
  const transfer = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    for (let rank = 0; rank < 8; rank++) {
      const lines = [];
      for (let step = 1, bytes = 0; bytes < 8 << 20; step++) {
        const heavy = step % 8 === rank;
        const lengths = Array.from({ length: 400 }, (_, i) => 100 + ((i * 37 + step * 11 + rank * 7) % 200) + (heavy && i === 0 ? 8000 : 0));
        const line = JSON.stringify({ step, rank, step_s: 1 + (heavy ? 0.5 : 0), lengths }) + "\n";
        lines.push(line);
        bytes += line.length;
      }
      dt.items.add(new File(lines, `rank${rank}.jsonl`));
    }
    return dt;
  });
  await drop(page, transfer);
  const names = Array.from({ length: 8 }, (_, r) => `rank${r}.jsonl`);
  assert.ok(await verdictFor(page, names));
  const cores = await page.evaluate(() => navigator.hardwareConcurrency);
  const timing = page.locator(".timing");
  const workers = Number(await timing.getAttribute("data-import-workers"));
  assert.ok(workers >= Math.min(2, cores) && workers <= Math.min(cores, 8), `${workers} workers read the files on ${cores} cores`);
  const readMemory = Number(await timing.getAttribute("data-read-wasm-bytes"));
  assert.ok(readMemory >= workers << 20, `the reading workers' memory: ${readMemory} bytes`);
  await showView(page, "files");
  assert.equal(await page.locator(".files tbody tr").count(), 8, "each file once");
});

test("a dropped folder is walked and its traces loaded", { skip: NO_SHARED }, async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  const files = ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"].map((f) => ({ name: f, data: base64(readFileSync(join(DP2, "dp2-random", f))) }));
  // Headless Chromium cannot drag a real folder: stand in for the browser's entries API (the
  // app's traversal of it is what is tested), with a README the traversal must skip.
  await page.evaluate((items) => {
    const file = (name, bytes) => ({ isFile: true, isDirectory: false, name, fullPath: `/run/${name}`, file: (ok) => ok(new File([bytes], name)) });
    const decoded = (data) => Uint8Array.from(atob(data), (c) => c.charCodeAt(0));
    const entries = [...items.map(({ name, data }) => file(name, decoded(data))), file("README.md", new Uint8Array([35, 32, 104, 105]))];
    const folder = { isFile: false, isDirectory: true, name: "run", fullPath: "/run", createReader: () => { let done = false; return { readEntries: (ok) => { ok(done ? [] : entries); done = true; } }; } };
    DataTransferItem.prototype.webkitGetAsEntry = function () { return folder; };
  }, files);
  await dropFiles(page, [{ name: "run", bytes: Buffer.from("x") }]);
  assert.equal(await verdictFor(page, ["run/rank0.pt.trace.json.gz", "run/rank1.pt.trace.json.gz"]), "sequence_length_imbalance");
});

test("embedded in a wiki page: compact layout, a same-origin attachment loaded from #src", { skip: NO_SHARED }, async (t) => {
  const src = "attachments/pytorch-cpu-dp2/dp2-balanced-slowrank1/rank1.pt.trace.json.gz";
  const { page, guard } = await open(t, `?embed=1#view=heatmap&src=${src}`);
  assert.ok(await verdictFor(page, ["rank1.pt.trace.json.gz"]));
  assert.equal(await page.locator("header.top").count(), 0, "no page header when embedded");
  assert.ok(guard.requests.some((r) => r.endsWith(src)), "the attachment was fetched from the page's origin");
  await page.screenshot({ path: join(SHOTS, "embed.png"), fullPage: true });
});

test("a #src naming another origin is refused, not fetched", async (t) => {
  const { page } = await open(t, "#src=https://example.invalid/trace.json");
  await page.waitForSelector(".banner.error");
  assert.match(await page.locator(".banner.error").innerText(), /not a relative same-origin URL/);
});

test("compare mode: the fixed run against the example", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  await page.click("text=Load the fixed run");
  await page.waitForSelector("#compare", { timeout: 90_000 });
  assert.equal(await page.locator("#compare").getAttribute("data-fixed"), "true");
  assert.match(await page.locator("#compare .headline").innerText(), /^Fixed/);
  assert.ok((await inked(page, "#chart-compare canvas")) > 0.02, "the comparison is drawn");
  await page.screenshot({ path: join(SHOTS, "compare.png"), fullPage: true });
});

/** The failed torchrun jobs made for the core's tests (in the repository, not ../shared). */
const FAILURES = resolve("crates/seqskew-core/tests/fixtures/failures");
function failureFile(relative) {
  return { name: relative.split("/").pop(), bytes: readFileSync(join(FAILURES, relative)) };
}

/** Waits for the failed job's hooks on #verdict; returns [cause, initiating ranks]. */
async function failureVerdict(page) {
  await page.waitForSelector("#verdict[data-failure-cause]", { timeout: 90_000 });
  const verdict = page.locator("#verdict");
  return [await verdict.getAttribute("data-failure-cause"), await verdict.getAttribute("data-initiating")];
}

test("a failed job's console and dumps: the initiating rank first, read by a worker loaded only then", async (t) => {
  const { page, guard } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  const failureBundle = () => guard.requests.some((r) => r.includes("seqskew-failure_bg.wasm"));
  assert.ok(!failureBundle(), "the failure reader is not part of the first load");
  await dropFiles(page, [
    failureFile("raise/console.log.gz"),
    ...[1, 2, 3].map((r) => failureFile(`raise/fr/nccl_trace_rank_${r}`)),
  ]);
  assert.deepEqual(await failureVerdict(page), ["crash", "2"]);
  assert.ok(failureBundle(), "the failure reader was loaded on demand");
  const panel = page.locator("#failure");
  assert.match(await panel.locator(".headline").innerText(), /^Rank 2 failed on its own \(RuntimeError: injected failure on rank 2\)/);
  assert.equal(await panel.locator(".initiating-ranks").innerText(), "2");
  assert.match(await panel.locator(".failure-evidence").innerText(), /console\.log\.gz:\d+ — rank 2, initiating/);
  assert.match(await panel.locator(".verify code").innerText(), /^seqskew check /);
  assert.ok((await panel.locator(".progress-table").count()) > 0, "the progress of each rank per process group");
  await page.screenshot({ path: join(SHOTS, "failure.png"), fullPage: true });
});

test("a pasted terminal: the killed rank", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  const text = gunzipSync(readFileSync(join(FAILURES, "killed/console.log.gz"))).toString("utf8");
  await page.fill("#paste", text);
  await page.click("#paste-analyse");
  assert.deepEqual(await failureVerdict(page), ["killed", "3"]);
  assert.match(await page.locator("#failure .failure-evidence").innerText(), /pasted\.log:\d+/);
});

test("a failed job with its step logs: where the failing rank stopped, in the panel and the report", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  await dropFiles(page, [
    failureFile("oom_long_document/console.log.gz"),
    ...[0, 1, 2, 3].map((r) => failureFile(`oom_long_document/steps/rank${r}.jsonl`)),
  ]);
  assert.deepEqual(await failureVerdict(page), ["oom", "3"]);
  // The job wrote steps 0-2 on every rank; rank 3's step 2 held 901 tokens, its longest 458.
  const inJob = page.locator("#failure .in-job");
  await inJob.waitFor({ timeout: 90_000 });
  assert.match(await inJob.innerText(), /^Rank 3 recorded steps up to 2, as the others did: .* 901 tokens, its longest document 458 tokens/);
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("text=Report JSON")]);
  const report = JSON.parse(readFileSync(await download.path(), "utf8"));
  assert.equal(report.failure.cause, "oom");
  assert.deepEqual(report.failure.in_job, { rank: 3, last_step: 2, job_last_step: 2, tokens: 901, longest: 458, batch_longest: 994 });
});

/** Training logs made for the core's tests: real consoles with their lengths records. */
const TRAINING_LOGS = resolve("crates/seqskew-core/tests/fixtures/training_logs");

test("a training log with the lengths each rank drew: the verdict from its step times", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  // Real torchrun job (torchtitan's form): long-tailed documents packed to the same tokens per
  // rank, so the step waits for whichever rank drew the costliest documents.
  const files = ["console.log.gz", "lengths.jsonl"].map((f) => ({
    name: f,
    bytes: readFileSync(join(TRAINING_LOGS, "torchtitan_natural", f)),
  }));
  await dropFiles(page, files);
  assert.equal(await verdictFor(page, ["console.log.gz", "lengths.jsonl"]), "sequence_length_imbalance");
  assert.match(await page.locator("#verdict").innerText(), /training log's step times/);
  // A Megatron-LM console alone, with its straggler lines: rank 2 was made slow (extra compute).
  await dropFiles(page, [{ name: "console.log.gz", bytes: readFileSync(join(TRAINING_LOGS, "megatron_slow_rank", "console.log.gz")) }]);
  assert.equal(await verdictFor(page, ["console.log.gz"]), "slow_worker");
  assert.match(await page.locator("#verdict").innerText(), /Rank 2 was the slowest/);
});

test("the log of a job that succeeded: no failure found, no guess", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.trace.json"]);
  await dropFiles(page, [failureFile("success/console.log")]);
  await page.waitForSelector("#failure .no-failure", { timeout: 90_000 });
  assert.match(await page.locator("#failure .no-failure").innerText(), /No failure found in console\.log/);
  assert.equal(await page.locator("#verdict").getAttribute("data-failure-cause"), null);
  // No straggler verdict either, and the panel says why and what to drop instead.
  assert.match(await page.locator("#verdict.empty").innerText(), /^No straggler verdict: logs .* hold no per-rank step timings.*What should I drop\?/s);
  // A file that cannot be read: the panel names it and its problem.
  await dropFiles(page, [{ name: "empty.json", bytes: Buffer.alloc(0) }]);
  await page.waitForFunction(() => document.querySelector("#verdict.empty")?.innerText.includes("empty.json"), null, { timeout: 90_000 });
  assert.match(await page.locator("#verdict.empty").innerText(), /^No verdict: nothing could be read\. empty\.json: the file is empty \(0 bytes\)/);
});

test("the bundles stay within their budgets, gzipped", () => {
  const sizes = bundle(DIST);
  assert.ok(sizes.first_wasm_bytes > 0 && sizes.first_js_bytes > 0, `the page's bundle built in ${DIST}`);
  assert.ok(sizes.worker_wasm_bytes > 0, "the analysis worker's bundle is built");
  assert.ok(sizes.on_demand_gzip > 0, "the failure worker is built, loaded on demand");
  // The page draws itself from the first bundle alone: the importers and the analysis are in
  // the worker's (a bundle that held both would weigh about as much as the two together).
  assert.ok(sizes.worker_wasm_bytes > sizes.first_wasm_bytes, "the analysis is in the worker's bundle, not the page's");
  assert.ok(sizes.first_gzip <= FIRST_BUDGET_GZIP, `first bundle ${sizes.first_gzip} bytes gzipped, over its ${FIRST_BUDGET_GZIP}-byte budget`);
  assert.ok(
    sizes.at_open_gzip <= AT_OPEN_BUDGET_GZIP,
    `first visit ${sizes.at_open_gzip} bytes gzipped (page and analysis worker), over the ${AT_OPEN_BUDGET_GZIP}-byte budget`,
  );
});
