// Starts the app: loads the wasm bundle next to this file (any sub-path works).
"use strict";
wasm_bindgen({ module_or_path: "./seqskew-web_bg.wasm" }).catch(function (err) {
  var status = document.getElementById("boot-status");
  if (status) {
    status.className = "boot error";
    status.textContent = "seqskew could not start: " + err;
  }
});
