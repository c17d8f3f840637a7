//! Helpers shared by the unit tests.

/// A xorshift generator from `seed` (nonzero): each call gives a number below `k` (0 for
/// `k` = 0), the same sequence for the same seed, so random test cases repeat.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |k| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % k.max(1)
    }
}
