// The analysis worker (crates/seqskew-web, binary seqskew-worker): the importers and the
// analysis, a bundle of their own that the page's does not hold. The page's requests wait in
// the bridge until the worker says it is loaded.
"use strict";
importScripts("./seqskew-worker.js");
wasm_bindgen({ module_or_path: "./seqskew-worker_bg.wasm" });
