// The failure worker (crates/seqskew-failure-worker): the analysis worker starts it only when a
// dropped file is a log, an error file or a Flight Recorder dump. Messages that arrive while its wasm
// loads are kept and handed to it once its main() has taken over `onmessage`.
"use strict";
var early = [];
self.onmessage = function (event) { early.push(event); };
importScripts("./seqskew-failure.js");
wasm_bindgen({ module_or_path: "./seqskew-failure_bg.wasm" }).then(function () {
  early.forEach(function (event) { self.onmessage(event); });
  early = [];
}).catch(function (err) {
  self.postMessage({ job: null, error: "the failure reader could not start: " + err });
});
