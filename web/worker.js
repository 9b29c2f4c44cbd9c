// The analysis worker: the same wasm bundle as the page; its main() sees no window and serves
// the page's requests instead of rendering.
"use strict";
importScripts("./seqskew-web.js");
wasm_bindgen({ module_or_path: "./seqskew-web_bg.wasm" });
