//! Copying to the clipboard, below the verdict and failure panels whose copy buttons use it.

/// Puts `text` on the clipboard; a refusal (no permission, no focus) is silently ignored.
pub fn copy_to_clipboard(text: String) {
    let Some(window) = web_sys::window() else { return };
    let promise = window.navigator().clipboard().write_text(&text);
    wasm_bindgen_futures::spawn_local(async move {
        let _ = wasm_bindgen_futures::JsFuture::from(promise).await;
    });
}
