//! File downloads (reports, charts as images), below the app and the charts that offer them.

use wasm_bindgen::JsCast;

/// Offers `text` as a file download (a local blob URL: nothing leaves the page).
pub fn download(name: &str, mime: &str, text: &str) {
    let parts = js_sys::Array::of1(&wasm_bindgen::JsValue::from_str(text));
    let options = web_sys::BlobPropertyBag::new();
    options.set_type(mime);
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(&parts, &options) else { return };
    download_blob(name, &blob);
}

fn download_blob(name: &str, blob: &web_sys::Blob) {
    let Ok(url) = web_sys::Url::create_object_url_with_blob(blob) else { return };
    download_url(name, &url);
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// Offers what `url` (a blob or data URL) holds as the file `name`.
pub fn download_url(name: &str, url: &str) {
    let Some(document) = web_sys::window().and_then(|w| w.document()) else { return };
    if let Ok(a) = document.create_element("a").map(|e| e.unchecked_into::<web_sys::HtmlAnchorElement>()) {
        a.set_href(url);
        a.set_download(name);
        a.click();
    }
}
