//! The Flight Recorder pickle decoder on any bytes. Its promises: bad input is an error that
//! points into the input, never a panic, a stack overflow or an allocation the input cannot
//! back; tighter limits can only turn a result into an error, never change it; and a decoded
//! tree is one every walk of finishes within the limits (the dump reader's, `Debug`'s).
#![no_main]

use libfuzzer_sys::fuzz_target;
use seqskew_core::failure::dump;
use seqskew_core::failure::pickle::{Limits, Node, Value, decode, decode_with};

/// Small enough that a few hundred fuzzer bytes reach every limit.
const SMALL: Limits = Limits { max_depth: 8, max_values: 1000, max_memo: 16 };

fuzz_target!(|data: &[u8]| {
    let whole = decode(data);
    if let Err(e) = &whole {
        assert!(e.offset <= data.len(), "{e} points past the {} bytes", data.len());
        assert!(!e.message.is_empty());
    }
    if let Ok(tree) = &whole {
        // Whatever it decodes to, the reader must not panic on it.
        let _ = dump::read(tree.root());
    }
    let small = decode_with(data, &SMALL);
    if let Ok(tree) = &small {
        within(tree.root(), &SMALL);
        // Debug rather than ==, for NaN != NaN (within the limits, Debug shows every value).
        assert_eq!(format!("{whole:?}"), format!("{small:?}"), "tighter limits changed the result");
    }
});

/// The tree respects the limits it was decoded under: a walk following every reference meets
/// at most `max_values` values, `max_depth` containers deep (walked without recursion).
fn within(root: Node<'_>, limits: &Limits) {
    let mut todo = vec![(root, 0_usize)];
    let mut count = 0;
    while let Some((node, enclosing)) = todo.pop() {
        count += 1;
        assert!(count <= limits.max_values, "more than {} values", limits.max_values);
        let children: Vec<Node<'_>> = match node.value() {
            Value::List(items) | Value::Tuple(items) => items.collect(),
            Value::Dict(entries) => entries.flat_map(|(k, v)| [k, v]).collect(),
            _ => continue,
        };
        assert!(enclosing < limits.max_depth, "containers nested deeper than {}", limits.max_depth);
        todo.extend(children.into_iter().map(|child| (child, enclosing + 1)));
    }
}
