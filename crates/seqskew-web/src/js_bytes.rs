//! A `Uint8Array` as a byte stream (`Read` and `Write` from its front), so that bytes cross
//! between JavaScript and WebAssembly memory a piece at a time: the worker's file slices and
//! the result payload never need a whole copy in WebAssembly memory, which never shrinks.

use std::io::{Read, Write};

/// A `Uint8Array` read or written from the front, as a byte stream.
pub struct JsBytes<'a> {
    array: &'a js_sys::Uint8Array,
    at: u32,
}

impl<'a> JsBytes<'a> {
    pub fn new(array: &'a js_sys::Uint8Array) -> Self {
        JsBytes { array, at: 0 }
    }

    /// The next `wanted` bytes at most, as a view (empty at the end).
    fn next(&mut self, wanted: usize) -> js_sys::Uint8Array {
        let end = self.array.length().min(self.at.saturating_add(u32::try_from(wanted).unwrap_or(u32::MAX)));
        let view = self.array.subarray(self.at, end);
        self.at = end;
        view
    }
}

impl Read for JsBytes<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let view = self.next(buf.len());
        let n = view.length() as usize;
        if let Some(into) = buf.get_mut(..n) {
            view.copy_to(into);
        }
        Ok(n)
    }
}

impl Write for JsBytes<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let view = self.next(buf.len());
        let n = view.length() as usize;
        if let Some(from) = buf.get(..n) {
            view.copy_from(from);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
