//! The Flight Recorder pickle decoder on any bytes. Its promises: bad input is an error that
//! points into the input, never a panic, a stack overflow or an allocation the input cannot
//! back; and tighter limits can only turn a result into an error, never change it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use seqskew_core::failure::pickle::{Limits, Value, decode, decode_with};

/// Small enough that a few hundred fuzzer bytes reach every limit.
const SMALL: Limits = Limits { max_depth: 8, max_values: 1000, max_memo: 16 };

fuzz_target!(|data: &[u8]| {
    let whole = decode(data);
    if let Err(e) = &whole {
        assert!(e.offset <= data.len(), "{e} points past the {} bytes", data.len());
        assert!(!e.message.is_empty());
    }
    let small = decode_with(data, &SMALL);
    if let Ok(value) = &small {
        within(value, &SMALL);
        // Debug rather than ==, for NaN != NaN.
        assert_eq!(format!("{whole:?}"), format!("{small:?}"), "tighter limits changed the result");
    }
});

/// The tree respects the limits it was decoded under (walked without recursion).
fn within(root: &Value, limits: &Limits) {
    let mut todo = vec![(root, 0_usize)];
    let mut count = 0;
    while let Some((value, enclosing)) = todo.pop() {
        count += 1;
        if matches!(value, Value::List(_) | Value::Tuple(_) | Value::Dict(_)) {
            assert!(enclosing < limits.max_depth, "containers nested deeper than {}", limits.max_depth);
        }
        let children = value.items().iter().chain(value.entries().iter().flat_map(|(k, v)| [k, v]));
        todo.extend(children.map(|child| (child, enclosing + 1)));
    }
    assert!(count <= limits.max_values, "{count} values, more than {}", limits.max_values);
}
