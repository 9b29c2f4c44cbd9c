//! A seeded random source for the importers' randomised tests.

/// A seeded xorshift generator: the importers' randomised tests draw their cases from it.
pub(super) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}
