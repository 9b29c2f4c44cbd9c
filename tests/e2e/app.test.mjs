// End-to-end: the release build, served from a sub-path on 127.0.0.1, in headless Chromium.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { serve } from "../../scripts/static-server.mjs";
import { launch, guardedContext } from "./browser.mjs";

const DIST = process.env.SEQSKEW_DIST || "dist";
const SHOTS = process.env.SEQSKEW_SCREENSHOTS || "target/e2e-screenshots";
const FIXTURES = process.env.SEQSKEW_FIXTURES || "../shared/fixtures";
const BASE = "/wiki/tools/seqskew/";

let server, browser;
before(async () => {
  mkdirSync(SHOTS, { recursive: true });
  server = await serve(DIST, { base: BASE });
  browser = await launch();
});
after(async () => {
  await browser?.close();
  await server?.close();
});

/** Opens the app; returns the page and the request log. Fails the test on page errors. */
async function open(t, hash = "") {
  const guard = await guardedContext(browser, server.url);
  const page = await guard.context.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  await page.goto(server.url + hash);
  t.after(async () => {
    await guard.context.close();
    assert.deepEqual(guard.violations, [], "requests beyond the app's own assets");
    assert.deepEqual(errors, [], "errors on the page");
  });
  return { page, guard };
}

/** Waits until the verdict names exactly these files. */
async function verdictFor(page, files) {
  const want = files.join(",");
  await page.waitForFunction((w) => document.querySelector("#verdict")?.dataset.files === w, want, { timeout: 60_000 });
  return page.locator("#verdict");
}

/** Drops files on the page with a real DataTransfer drop event. */
async function dropFiles(page, files) {
  const payload = files.map(({ name, bytes }) => ({ name, data: Array.from(bytes) }));
  const transfer = await page.evaluateHandle((items) => {
    const dt = new DataTransfer();
    for (const { name, data } of items) dt.items.add(new File([new Uint8Array(data)], name));
    return dt;
  }, payload);
  await page.dispatchEvent("main", "dragenter", { dataTransfer: transfer });
  await page.dispatchEvent("main", "dragover", { dataTransfer: transfer });
  await page.dispatchEvent("main", "drop", { dataTransfer: transfer });
}

function fixture(relative) {
  return { name: relative.split("/").pop(), bytes: readFileSync(join(FIXTURES, relative)) };
}

test("first visit shows the example job, from a sub-path, with no outside requests", async (t) => {
  const { page, guard } = await open(t);
  const verdict = await verdictFor(page, ["seqlen-imbalance.steplog.jsonl"]);
  assert.ok(await verdict.getAttribute("data-cause"));
  assert.ok(guard.requests.some((r) => r.endsWith(".wasm")), "the wasm bundle was loaded from the sub-path");
  await page.screenshot({ path: join(SHOTS, "example.png"), fullPage: true });
});

test("dropped files are listed with their formats; a bad file beside a good one is diagnosed", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.steplog.jsonl"]);
  const good = fixture("pytorch-cpu-dp2/dp2-random/rank0.pt.trace.json.gz");
  await dropFiles(page, [good, { name: "broken.json", bytes: Buffer.from("{\"traceEvents\": [") }]);
  await verdictFor(page, [good.name, "broken.json"]);
  const table = await page.locator(".files table").innerText();
  assert.match(table, /PyTorch profiler \(Kineto\) trace/);
  assert.match(await page.locator(".diagnostics").innerText(), /broken\.json.*ends before any trace events/);
  await page.screenshot({ path: join(SHOTS, "dropped.png"), fullPage: true });
});

test("the file picker loads files too", async (t) => {
  const { page } = await open(t);
  await verdictFor(page, ["seqlen-imbalance.steplog.jsonl"]);
  const paths = ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"].map((f) => join(FIXTURES, "pytorch-cpu-dp2/dp2-random", f));
  await page.setInputFiles("#file-input", paths);
  await verdictFor(page, ["rank0.pt.trace.json.gz", "rank1.pt.trace.json.gz"]);
  assert.match(await page.locator(".files h2").innerText(), /2 workers, 10 steps/);
});
