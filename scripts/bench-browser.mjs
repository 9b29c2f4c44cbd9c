// The in-browser benchmark: the release build (dist/) in headless Chromium, measured from inside
// the page. Prints progress to stderr and writes JSON to --out.
//
//   node scripts/bench-browser.mjs --dist dist --out target/bench/browser.json --runs 3 \
//     --input "LABEL=PATH" [--input ...] [--failure "LABEL=PATH" ...] [--big PATH] [--huge PATH]
//
// An --input PATH is a trace file or a folder of them (all its files, as a user selecting them).
// Files go in through the app's file picker (#file-input); a run ends when #verdict names them.
// The JSON: chromium, bundle (dist/*.wasm and *.js, raw and gzip -9), first_paint_ms and
// first_verdict_ms per run, ingest (per input: runs_ms, mb_per_s, the verdict's cause), memory
// (per input), timeline_frame_ms (the app's ?bench=timeline page: 4096 workers × 1000 steps),
// big and huge (outcome, message, memory, whether the page survived), and notes saying exactly
// what each number measures. A --failure input is a failed job's log or folder of Flight Recorder
// dumps: a run ends when the failure panel has its answer (#verdict[data-failure-cause], or
// "no failure found"), which the failure worker, loaded on demand, gives. Every page runs in the e2e tests' guarded context: any request
// beyond the app's own assets fails the measurement. Nothing here hangs: every wait has a limit
// and an error names the measurement that failed.
import { mkdirSync, readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { parseArgs } from "node:util";
import { serve } from "./static-server.mjs";
import { bundle } from "./bundle-size.mjs";
import { launch, guardedContext } from "../tests/e2e/browser.mjs";

const { values: opts } = parseArgs({
  options: {
    dist: { type: "string", default: "dist" },
    out: { type: "string", default: "target/bench/browser.json" },
    runs: { type: "string", default: "3" },
    input: { type: "string", multiple: true, default: [] },
    failure: { type: "string", multiple: true, default: [] },
    big: { type: "string" },
    huge: { type: "string" },
  },
});
const RUNS = Number(opts.runs);
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error(`--runs ${opts.runs}: expected a whole number ≥ 1`);
const MIB = 1 << 20;
// A job may take this long at worst (1 MB/s), and must show progress at least this often: a
// wasm trap or a lost message leaves the page waiting forever, and the benchmark must say so.
const jobLimitMs = (bytes) => 120_000 + bytes / 1000;
const STALL_MS = 300_000;
const notes = [];

const log = (...a) => console.error("[bench-browser]", ...a);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const round = (x, digits = 1) => (x == null ? null : Math.round(x * 10 ** digits) / 10 ** digits);
const mib = (bytes) => round(bytes / MIB);
function quantile(xs, q) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}
function withTimeout(promise, ms, what) {
  let timer;
  const limit = new Promise((_, fail) => (timer = setTimeout(() => fail(new Error(`${what}: timed out after ${ms / 1000} s`)), ms)));
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

/** The files an input names: the file, or every file in the folder, sorted like a file dialog. */
function inputFiles(path) {
  if (!statSync(path).isDirectory()) return [path];
  return readdirSync(path).sort().map((f) => join(path, f)).filter((f) => statSync(f).isFile());
}
const bytesOf = (files) => files.reduce((n, f) => n + statSync(f).size, 0);

// Runs in every page before the app starts. It timestamps what is measured with the page's own
// clock, from a MutationObserver, so Playwright's polling latency is in no number. `expect(files)`
// arms a job: it starts at the picker's change event and ends at a verdict naming exactly
// `files`, or else when the progress bar goes away (a crash, or nothing to analyse): then the
// error banner or the files' problems say why. (Keying on the progress bar, not the banner,
// lets a job start while an earlier job's banner is still up.)
function pageProbe() {
  const GRACE_MS = 2000;
  const b = (window.__bench = { verdictAt: null, timelineAt: null, job: null, failure: null });
  b.expect = (files) => (b.job = { files, start: null, end: null, sawProgress: false, progress: "" });
  // A failed job's run: from the picker's change event to the failure panel's answer.
  b.expectFailure = () => (b.failure = { start: null, end: null });
  const check = () => {
    const now = performance.now();
    const failure = b.failure;
    if (failure && failure.start !== null && failure.end === null &&
      (document.querySelector("#verdict[data-failure-cause]") || document.querySelector("#failure .no-failure"))) failure.end = now;
    const verdict = document.querySelector("#verdict");
    if (b.verdictAt === null && verdict?.dataset.cause) b.verdictAt = now;
    if (b.timelineAt === null && document.querySelector("#chart-timeline canvas")) b.timelineAt = now;
    const job = b.job;
    if (!job || job.start === null || job.end !== null) return;
    const progress = document.querySelector(".progress");
    if (progress) Object.assign(job, { sawProgress: true, progress: (progress.querySelector("span") ?? progress).innerText });
    if (verdict?.dataset.cause && verdict.dataset.files === job.files) {
      // The worker's own account (rendered with the verdict): reading and importing, then analysing.
      const timing = document.querySelector(".timing")?.dataset ?? {};
      Object.assign(job, {
        end: now, cause: verdict.dataset.cause, readMs: Number(timing.readMs), analysisMs: Number(timing.analysisMs),
        importWorkers: Number(timing.importWorkers), readWasmBytes: Number(timing.readWasmBytes),
      });
    }
    else if (job.sawProgress && !progress) {
      // The progress bar and the verdict may change in different renders: give the verdict a
      // moment unless an error is already showing.
      const why = document.querySelector(".banner.error span") ?? document.querySelector(".diagnostics");
      job.goneAt ??= now;
      if (why || now - job.goneAt > GRACE_MS) {
        Object.assign(job, { end: now, error: why?.innerText || `no verdict for these files (the verdict names: ${verdict?.dataset.files})` });
      } else setTimeout(check, GRACE_MS + 10);
    }
  };
  new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true, characterData: true });
  document.addEventListener("change", (e) => {
    if (b.job && e.target.id === "file-input") b.job.start ??= performance.now();
    if (b.failure && e.target.id === "file-input") b.failure.start ??= performance.now();
  }, true);
}

/**
 * A DevTools session on the page and on its analysis worker. Playwright offers CDP sessions for
 * pages only, so the worker is reached through auto-attach in the non-flattened mode (messages
 * wrapped in Target.sendMessageToTarget), which a plain CDPSession can speak.
 */
async function attachProbe(context, page) {
  const cdp = await context.newCDPSession(page);
  const pending = new Map();
  let nextId = 1;
  const probe = { worker: null, workerErrors: [] };
  cdp.on("Target.attachedToTarget", ({ sessionId, targetInfo }) => {
    if (targetInfo.type !== "worker") return;
    probe.worker = (method, params = {}) =>
      new Promise((ok, fail) => {
        const id = nextId++;
        pending.set(id, { ok, fail });
        cdp.send("Target.sendMessageToTarget", { sessionId, message: JSON.stringify({ id, method, params }) }).catch(fail);
      });
    probe.worker("Runtime.enable").catch(() => {});
  });
  cdp.on("Target.receivedMessageFromTarget", ({ message }) => {
    const m = JSON.parse(message);
    if (m.method === "Runtime.exceptionThrown") {
      const d = m.params.exceptionDetails;
      probe.workerErrors.push({ at: Date.now(), text: (d.exception?.description ?? d.text).split("\n")[0] });
    }
    const call = pending.get(m.id);
    if (!call) return;
    pending.delete(m.id);
    if (m.error) call.fail(new Error(m.error.message));
    else call.ok(m.result);
  });
  await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  await cdp.send("Performance.enable");
  probe.page = (method, params) => cdp.send(method, params);
  return probe;
}

/** Bytes of every WebAssembly.Memory alive in a context (found on the heap: the bundle keeps its own private). */
async function wasmMemoryBytes(send) {
  const { result } = await send("Runtime.evaluate", { expression: "WebAssembly.Memory.prototype", objectGroup: "bench" });
  const { objects } = await send("Runtime.queryObjects", { prototypeObjectId: result.objectId, objectGroup: "bench" });
  const sum = "function () { return this.reduce((n, m) => n + m.buffer.byteLength, 0); }";
  const { result: total } = await send("Runtime.callFunctionOn", { objectId: objects.objectId, functionDeclaration: sum, returnByValue: true });
  await send("Runtime.releaseObjectGroup", { objectGroup: "bench" });
  return total.value;
}

/** The largest peak resident set (VmHWM) among the browser's renderers: the tab's, in a fresh browser. */
async function rendererPeakRss(browser) {
  const session = await browser.newBrowserCDPSession();
  const { processInfo } = await session.send("SystemInfo.getProcessInfo");
  await session.detach();
  const peaks = processInfo.filter((p) => p.type === "renderer").map((p) => {
    try {
      return Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${p.id}/status`, "utf8"))?.[1] ?? 0) * 1024;
    } catch {
      return 0;
    }
  });
  return Math.max(0, ...peaks);
}

/**
 * Opens the app (`suffix` appended to its URL) in a guarded context, runs `fn`, and closes it.
 * Requests beyond the app's own assets fail the measurement; so do errors on the page unless
 * `tolerateErrors` (big inputs may legitimately fail), in which case they are returned.
 */
async function withPage(browser, what, suffix, fn, { tolerateErrors = false } = {}) {
  const guard = await guardedContext(browser, server.url);
  try {
    const page = await guard.context.newPage();
    page.setDefaultTimeout(120_000);
    const errors = [];
    const state = { crashed: false };
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
    page.on("crash", () => (state.crashed = true));
    await page.addInitScript(pageProbe);
    const probe = await attachProbe(guard.context, page);
    await page.goto(server.url + suffix);
    const result = await fn({ page, probe, state, errors });
    if (guard.violations.length) throw new Error(`${what}: requests beyond the app's own assets: ${guard.violations.join(", ")}`);
    if (errors.length && !tolerateErrors) throw new Error(`${what}: errors on the page: ${errors.join(" | ")}`);
    return result;
  } catch (e) {
    throw e.message.startsWith(what) ? e : new Error(`${what}: ${e.message}`);
  } finally {
    await withTimeout(guard.context.close(), 30_000, `${what}: closing the page`).catch(() => {});
  }
}

/** Waits for the example's verdict: the app is up and its worker idle. */
async function appReady(page, what) {
  await page.waitForFunction(() => window.__bench.verdictAt !== null, null, { timeout: 120_000 }).catch(() => {
    throw new Error(`${what}: the example's verdict did not appear within 120 s`);
  });
}

/**
 * Loads `files` through the picker and waits for the job's end. Returns the page's record of the
 * job ({start, end, cause} or {error}); a tab crash, a worker exception, a stall or the time
 * limit come back as errors too. `sample` runs about twice a second meanwhile.
 */
async function runJob({ page, probe, state }, files, { sample } = {}) {
  const names = files.map((f) => basename(f)).join(",");
  const earlier = probe.workerErrors.length;
  await page.evaluate((n) => window.__bench.expect(n), names);
  await page.setInputFiles("#file-input", files, { timeout: 600_000 });
  const limit = Date.now() + jobLimitMs(bytesOf(files));
  let last = null;
  let lastChange = Date.now();
  for (;;) {
    if (state.crashed) return { error: "the tab crashed" };
    const job = await withTimeout(page.evaluate(() => window.__bench.job), 60_000, "reading the page's state").catch((e) => ({ error: `the page stopped answering (${e.message})` }));
    if (job.error || job.end != null) return job;
    // A worker that panics reports it, then traps: give the page time to show the report.
    const thrown = probe.workerErrors.slice(earlier);
    if (thrown.length && Date.now() - thrown[0].at > 5_000) return { ...job, error: `the worker threw: ${thrown.map((e) => e.text).join(" | ")}` };
    if (job.progress !== last) [last, lastChange] = [job.progress, Date.now()];
    if (Date.now() - lastChange > STALL_MS) return { ...job, error: `stalled: no progress for ${STALL_MS / 1000} s (last: ${last})` };
    if (Date.now() > limit) return { ...job, error: `no verdict within ${Math.round(jobLimitMs(bytesOf(files)) / 1000)} s (last: ${last})` };
    await sample?.();
    await sleep(500);
  }
}

/**
 * One job in a fresh browser (so the renderer's peak RSS is this job's), sampling the page's JS
 * heap and the worker's JS heap meanwhile; wasm memory only grows, so its size at the end is its
 * peak. Then, if `afterwards` names files, they are loaded to show the page still works.
 */
async function measuredJob(what, files, { tolerateErrors = false, afterwards } = {}) {
  const browser = await launch();
  try {
    return await withPage(browser, what, "", async (ctx) => {
      await appReady(ctx.page, what);
      const peak = { page: 0, worker: 0 };
      const sample = async () => {
        const { metrics } = await ctx.probe.page("Performance.getMetrics");
        peak.page = Math.max(peak.page, metrics.find((m) => m.name === "JSHeapUsedSize")?.value ?? 0);
        // A worker busy inside one slice answers late: never wait long for it.
        const heap = await withTimeout(ctx.probe.worker?.("Runtime.getHeapUsage"), 2_000, "worker heap").catch(() => null);
        peak.worker = Math.max(peak.worker, heap?.usedSize ?? 0);
      };
      const job = await runJob(ctx, files, { sample });
      await sample().catch(() => {}); // a job quicker than one sampling interval
      const alive = await withTimeout(ctx.page.evaluate(() => !!document.querySelector("main.page")), 30_000, "liveness").catch(() => false);
      const wasm = async (send) => (alive ? withTimeout(wasmMemoryBytes(send), 60_000, "wasm memory").catch(() => null) : null);
      const memory = {
        peak_js_heap_mib: mib(peak.page),
        peak_worker_js_heap_mib: mib(peak.worker),
        wasm_memory_mib: mib(await wasm(ctx.probe.worker)),
        page_wasm_memory_mib: mib(await wasm(ctx.probe.page)),
        import_workers: job.importWorkers ?? null,
        read_wasm_memory_mib: job.readWasmBytes == null ? null : mib(job.readWasmBytes),
        renderer_peak_rss_mib: mib(await rendererPeakRss(browser)),
      };
      let worksAfter = null;
      if (alive && afterwards) {
        const again = await runJob(ctx, afterwards);
        worksAfter = again.error ? `no: ${again.error}` : `yes: ${basename(afterwards[0])}… analysed (${again.cause})`;
      }
      return { job, memory, alive, worksAfter, errors: ctx.errors };
    }, { tolerateErrors });
  } finally {
    await browser.close();
  }
}

// Pan and zoom the timeline from inside the page, one input event per animation frame, at every
// scale: 15 wheel zooms in (to ~35 of 1000 steps), 40 drag moves of 8 px, 15 more zooms in (to
// about one step), 40 more drag moves, 25 zooms out (not quite all, so the last picture differs
// from the first: proof that the view moved); twice, at different places. Frame time is the
// interval between animation frames; draw time runs from the event to the next task, by when
// the app has rendered and drawn.
async function panZoom() {
  const canvas = document.querySelector("#chart-timeline canvas");
  const box = canvas.getBoundingClientRect();
  const y = box.top + box.height / 2;
  const fire = (type, x, init = {}) =>
    canvas.dispatchEvent(new (type === "wheel" ? WheelEvent : MouseEvent)(type, { bubbles: true, cancelable: true, clientX: x, clientY: y, ...init }));
  const plan = [];
  const zoom = (x, n, deltaY) => {
    for (let i = 0; i < n; i++) plan.push(() => fire("wheel", x, { deltaY }));
  };
  const drag = (x, dir) => {
    for (let i = 1; i <= 40; i++) {
      plan.push(() => {
        if (i === 1) fire("mousedown", x);
        fire("mousemove", x + dir * 8 * i);
        if (i === 40) fire("mouseup", x + dir * 8 * i);
      });
    }
  };
  for (const at of [0.3, 0.7]) {
    const x = box.left + box.width * at;
    const dir = at < 0.5 ? 1 : -1;
    zoom(x, 15, -100);
    drag(x, dir);
    zoom(x, 15, -100);
    drag(x, dir);
    zoom(x, 25, 100);
  }
  const digest = () => {
    const { data } = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height);
    let h = 0;
    for (let i = 0; i < data.length; i += 4) h = (h * 31 + data[i] + data[i + 1] * 7 + data[i + 2] * 13) | 0;
    return h;
  };
  const before = digest();
  const frames = [];
  const draws = [];
  await new Promise((done) => {
    const next = (ts) => {
      frames.push(ts);
      const step = plan[frames.length - 1];
      if (!step) return done();
      const t = performance.now();
      step();
      const channel = new MessageChannel();
      channel.port1.onmessage = () => draws.push(performance.now() - t);
      channel.port2.postMessage(0);
      requestAnimationFrame(next);
    };
    requestAnimationFrame(next);
  });
  return { intervals: frames.slice(1).map((t, i) => t - frames[i]), draws, moved: digest() !== before };
}

// ---------------------------------------------------------------------------------------------

function labelled(flag) {
  return (spec) => {
    const at = spec.indexOf("=");
    if (at < 1) throw new Error(`--${flag} ${spec}: expected LABEL=PATH`);
    const files = inputFiles(spec.slice(at + 1));
    return { label: spec.slice(0, at), files, bytes: bytesOf(files) };
  };
}
const inputs = opts.input.map(labelled("input"));
const failureInputs = opts.failure.map(labelled("failure"));

/**
 * Picks a failed job's files and waits for the failure panel's answer; returns [ms, cause]:
 * the page's clock from the picker's change event (as the ingest rows), so the time Playwright
 * takes to hand the files over CDP (1.5 s for 4096 paths) is in no number.
 */
async function failureRun({ page }, files) {
  const limit = jobLimitMs(bytesOf(files));
  await page.evaluate(() => window.__bench.expectFailure());
  await page.setInputFiles("#file-input", files, { timeout: 600_000 });
  await page.waitForFunction(() => window.__bench.failure.end !== null, null, { timeout: limit, polling: 20 });
  const ms = await page.evaluate(() => window.__bench.failure.end - window.__bench.failure.start);
  return [Math.round(ms), (await page.locator("#verdict").getAttribute("data-failure-cause")) ?? "none"];
}
const server = await serve(opts.dist, { base: "/seqskew/" });
const browser = await launch();
const result = { chromium: browser.version(), bundle: bundle(opts.dist) };
try {
  log(`Chromium ${result.chromium}; bundle ${JSON.stringify(result.bundle)}`);

  result.first_paint_ms = [];
  result.first_verdict_ms = [];
  for (let run = 1; run <= RUNS; run++) {
    log(`first paint, run ${run}/${RUNS}`);
    await withPage(browser, "first paint", "", async ({ page }) => {
      await appReady(page, "first paint");
      const { fcp, verdict } = await page.evaluate(() => ({
        fcp: performance.getEntriesByName("first-contentful-paint")[0]?.startTime,
        verdict: window.__bench.verdictAt,
      }));
      if (fcp == null) throw new Error("first paint: no first-contentful-paint entry");
      result.first_paint_ms.push(round(fcp));
      result.first_verdict_ms.push(round(verdict));
    });
  }
  notes.push(
    "first_paint_ms is first-contentful-paint of a fresh load (no cache shared between runs). The app has no URL that skips the example, " +
      "so the load starts the example job; its first paint is the boot text, before the wasm runs. first_verdict_ms is navigation start to the example's verdict.",
  );

  result.ingest = [];
  for (const { label, files, bytes } of inputs) {
    const ms = [];
    const readMs = [];
    const analysisMs = [];
    let cause;
    for (let run = 1; run <= RUNS; run++) {
      log(`ingest ${label} (${files.length} files, ${mib(bytes)} MiB), run ${run}/${RUNS}`);
      const what = `ingest ${label}`;
      const job = await withPage(browser, what, "", async (ctx) => {
        await appReady(ctx.page, what);
        return runJob(ctx, files);
      });
      if (job.error) throw new Error(`${what}: ${job.error}`);
      ms.push(job.end - job.start);
      readMs.push(job.readMs);
      analysisMs.push(job.analysisMs);
      cause = job.cause;
    }
    const mbPerS = round(bytes / 1e6 / (quantile(ms, 0.5) / 1000));
    const workerMbPerS = readMs.map((t) => round(bytes / 1e6 / (t / 1000)));
    result.ingest.push({
      label, files: files.length, bytes, cause, runs_ms: ms.map((x) => round(x)), mb_per_s: mbPerS,
      worker_read_ms: readMs, worker_analysis_ms: analysisMs, worker_mb_per_s: workerMbPerS,
    });
  }
  notes.push(
    "ingest runs_ms: from the file picker's change event to the verdict naming the files, each run in a fresh page after the example; mb_per_s = bytes / 10^6 / median seconds. " +
      "worker_read_ms / worker_analysis_ms: the worker's own clock (the page's .timing data attributes): from the request to the last file imported, then assembling, " +
      "diagnosing and making the views; worker_mb_per_s = bytes / 10^6 / worker_read_ms per run (the ingest rate in the worker).",
  );

  result.failures = [];
  for (const { label, files, bytes } of failureInputs) {
    const ms = [];
    let cause;
    for (let run = 1; run <= RUNS; run++) {
      log(`failure ${label} (${files.length} files, ${mib(bytes)} MiB), run ${run}/${RUNS}`);
      const what = `failure ${label}`;
      [ms[run - 1], cause] = await withPage(browser, what, "", async (ctx) => {
        await appReady(ctx.page, what);
        return failureRun(ctx, files);
      });
    }
    result.failures.push({ label, files: files.length, bytes, cause, runs_ms: ms, mb_per_s: round(bytes / 1e6 / (quantile(ms, 0.5) / 1000)) });
  }
  if (failureInputs.length) {
    notes.push(
      "failures runs_ms: a failed job's files through the file picker, from the picker's change event to the failure panel's answer on #verdict " +
        "(the page's clock), each run in a fresh page after the example: the failure worker's wasm is fetched and compiled in that time too.",
    );
  }

  result.memory = [];
  for (const { label, files } of inputs) {
    log(`memory ${label}`);
    const { job, memory } = await measuredJob(`memory ${label}`, files);
    if (job.error) throw new Error(`memory ${label}: ${job.error}`);
    result.memory.push({ label, ...memory });
  }
  notes.push(
    "memory (one extra run per input, in a fresh browser): peak_js_heap_mib samples CDP Performance.getMetrics JSHeapUsedSize of the page every ~0.5 s, " +
      "peak_worker_js_heap_mib the worker's Runtime.getHeapUsage; wasm_memory_mib / page_wasm_memory_mib are the byteLength of every WebAssembly.Memory " +
      "in the worker / the page after the job (found with Runtime.queryObjects; wasm memory never shrinks, so that is its peak); read_wasm_memory_mib is the " +
      "wasm memory of every worker that read the files, together, when the last file was in, as the analysis worker reports it (.timing[data-read-wasm-bytes]: " +
      "the import workers end then, so the workers' peak is the larger of it and wasm_memory_mib); renderer_peak_rss_mib is " +
      "the renderer process's VmHWM from /proc (page, worker and everything else of the tab).",
  );

  const [W, S] = [4096, 1000];
  log(`timeline ${W} workers × ${S} steps`);
  result.timeline_frame_ms = await withPage(browser, "timeline frame time", `?bench=timeline&workers=${W}&steps=${S}`, async ({ page, probe }) => {
    await page.waitForFunction(() => window.__bench.timelineAt !== null, null, { timeout: 300_000 });
    const ready = await page.evaluate(() => window.__bench.timelineAt);
    const { intervals, draws, moved } = await withTimeout(page.evaluate(panZoom), 600_000, "timeline frame time: panning and zooming");
    if (!moved) throw new Error("timeline frame time: the picture did not change while panning and zooming");
    return {
      workers: W,
      steps: S,
      median: round(quantile(intervals, 0.5)),
      p95: round(quantile(intervals, 0.95)),
      frames: intervals.length,
      draw_median: round(quantile(draws, 0.5)),
      draw_p95: round(quantile(draws, 0.95)),
      first_draw_ms: round(ready),
      page_wasm_memory_mib: mib(await wasmMemoryBytes(probe.page)),
    };
  });
  notes.push(
    `timeline_frame_ms: the app's bench-only page (?bench=timeline) draws a synthetic ${W}×${S} TimelineData built in the page (3 spans per step, jittered; see crates/seqskew-web/src/bench.rs); ` +
      "median/p95 are intervals between animation frames while one wheel or drag event is dispatched per frame (headless Chromium, software raster, vsync ~16.7 ms); " +
      "draw_* is from each event to the next task (render and canvas draw); first_draw_ms is navigation start to the drawn canvas, including building the data.",
  );

  for (const [key, path] of [["big", opts.big], ["huge", opts.huge]]) {
    if (!path) continue;
    const files = inputFiles(path);
    const bytes = bytesOf(files);
    log(`${key}: ${path} (${files.length} files, ${mib(bytes)} MiB); this may take minutes`);
    const smallest = [...inputs].sort((a, b) => a.bytes - b.bytes)[0]?.files;
    const { job, memory, alive, worksAfter, errors } = await measuredJob(key, files, { tolerateErrors: true, afterwards: smallest });
    const seconds = job.end != null && job.start != null ? (job.end - job.start) / 1000 : null;
    result[key] = {
      path,
      files: files.length,
      bytes,
      loaded: !job.error,
      cause: job.cause ?? null,
      seconds: round(seconds, 2),
      mb_per_s: job.error ? null : round(bytes / 1e6 / seconds),
      worker_read_ms: job.readMs ?? null,
      worker_analysis_ms: job.analysisMs ?? null,
      message: job.error ?? null,
      last_progress: job.progress || null,
      page_alive_after: alive,
      page_works_after: worksAfter,
      page_errors: errors,
      ...memory,
    };
    if (!alive) notes.push(`${key}: THE TAB DIED or stopped answering (${job.error ?? "after the job"}).`);
  }
  if (opts.big || opts.huge) {
    notes.push(
      "big/huge (measured like memory): loaded tells whether a verdict came; seconds runs from picking the files to the verdict or the message; message is the error " +
        "banner, the files' problems, or why the wait ended; last_progress is the progress bar's last text; page_alive_after means the page still evaluated JS and " +
        "showed its drop zone; page_works_after is the smallest --input loaded afterwards in the same page (any error banner left up, as a user would).",
    );
  }
} finally {
  await browser.close();
  await server.close();
}

result.notes = notes;
mkdirSync(dirname(opts.out), { recursive: true });
writeFileSync(opts.out, JSON.stringify(result, null, 2) + "\n");
log(`wrote ${opts.out}`);
