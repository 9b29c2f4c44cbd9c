//! Floats as integer keys in `total_cmp`'s order, for the sorts of `analysis/stats.rs` and `balance.rs` alike.

/// `x` as an unsigned integer in the order of [`f64::total_cmp`], and back ([`from_order_key`]
/// gives the very same bits): sorting and selecting on the keys compares plain integers instead
/// of decoding two floats per comparison, and finds the same order.
pub fn order_key(x: f64) -> u64 {
    let bits = x.to_bits();
    // Negative numbers order backwards by their bits (all flipped); the others after them.
    if bits >> 63 == 1 { !bits } else { bits | 1 << 63 }
}

/// The float whose [`order_key`] is `key`.
pub fn from_order_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 { key & !(1 << 63) } else { !key })
}

/// The indices of `keys` in ascending order of key, index breaking ties. Each key and its index
/// are sorted as one integer: no two are equal, so an unstable sort gives the one order
/// (without a stable sort's buffer), comparing plain integers.
pub fn indices_by_key(keys: impl Iterator<Item = u64>) -> Vec<usize> {
    let mut keyed: Vec<u128> = keys.zip(0u64..).map(|(k, i)| u128::from(k) << 64 | u128::from(i)).collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|k| k as u64 as usize).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_sort_as_total_cmp_and_give_back_the_same_bits() {
        let values = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -f64::MIN_POSITIVE,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            1.0,
            1.0 + f64::EPSILON,
            3e9,
            f64::INFINITY,
            f64::NAN,
            -f64::NAN,
        ];
        for a in values {
            assert_eq!(from_order_key(order_key(a)).to_bits(), a.to_bits(), "{a}");
            for b in values {
                assert_eq!(order_key(a).cmp(&order_key(b)), a.total_cmp(&b), "{a} vs {b}");
            }
        }
        // Equal keys in index order.
        assert_eq!(indices_by_key([5, 1, 5, 0, u64::MAX, 1].into_iter()), vec![3, 1, 5, 0, 2, 4]);
    }
}
