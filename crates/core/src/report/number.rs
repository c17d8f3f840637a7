//! Numbers as report text, fast: fixed-point decimals and integers appended to a byte buffer,
//! byte for byte what `write!(out, "{x:.9}")` and `write!(out, "{n}")` give, without the
//! formatting machinery (calls.csv and trace.json print tens of millions of them).

/// Appends `x` with `prec` decimals (at most 9), exactly as `write!(out, "{x:.prec$}")`:
/// the binary value rounded to the nearest multiple of 10^-prec, ties to even, and a minus
/// sign whenever the sign bit is set (so `-0.000000000`). Values of 10^9 and above,
/// infinities and NaN go through `std::fmt`.
pub fn fixed(out: &mut Vec<u8>, x: f64, prec: usize) {
    let Some((neg, whole, decimals)) = fixed_parts(x, prec) else {
        use std::io::Write as _;
        let _ = write!(out, "{x:.prec$}");
        return;
    };
    // Sign, integer digits, point, decimals, written in place at the end of `out`.
    let int_end = usize::from(neg) + digit_count(whole);
    let dst = grow(out, int_end + point_and_decimals(prec));
    if neg {
        dst[0] = b'-';
    }
    put_digits(&mut dst[usize::from(neg)..int_end], whole);
    if prec > 0 {
        dst[int_end] = b'.';
        put_digits(&mut dst[int_end + 1..], decimals);
    }
}

/// The length of what [`fixed`] appends for `x` and `prec`, without writing it.
pub fn fixed_len(x: f64, prec: usize) -> usize {
    match fixed_parts(x, prec) {
        Some((neg, whole, _)) => usize::from(neg) + digit_count(whole) + point_and_decimals(prec),
        None => format!("{x:.prec$}").len(),
    }
}

fn point_and_decimals(prec: usize) -> usize {
    if prec > 0 { 1 + prec } else { 0 }
}

/// `x` rounded to `prec` decimals as [`fixed`] prints it: (minus sign, integer part,
/// decimals as an integer); None for what goes through `std::fmt`.
#[inline]
fn fixed_parts(x: f64, prec: usize) -> Option<(bool, u64, u64)> {
    if prec > 9 || x.is_nan() || x.abs() >= 1e9 {
        return None;
    }
    let scale = 10u64.pow(prec as u32);
    let bits = x.to_bits();
    let biased = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    // |x| = m · 2^e exactly.
    let (m, e) = if biased == 0 {
        (frac, -1074)
    } else {
        (frac | (1u64 << 52), biased - 1075)
    };
    // |x| · 10^prec = p · 2^e, with p < 2^83.
    let p = m as u128 * scale as u128;
    let q: u128 = if e >= 0 {
        // Not reached below 10^9 (a normal m is at least 2^52); exact all the same.
        p << e
    } else if -e >= 128 {
        // p · 2^e < 2^-45: rounds to 0.
        0
    } else {
        let sh = -e as u32;
        let q = p >> sh;
        let rem = p & ((1u128 << sh) - 1);
        let half = 1u128 << (sh - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    // q < 10^9 · 10^9 + 1: fits u64.
    let q = q as u64;
    Some((bits >> 63 == 1, q / scale, q % scale))
}

/// "00" to "99": two digits per division.
const PAIRS: &[u8; 200] = b"\
0001020304050607080910111213141516171819\
2021222324252627282930313233343536373839\
4041424344454647484950515253545556575859\
6061626364656667686970717273747576777879\
8081828384858687888990919293949596979899";

/// Lengthens `out` by `len` bytes and returns them, to be written in place: digits
/// stored into a stack buffer and copied out from there cost a stalled load (small
/// stores read back wide) and a call to memcpy.
#[inline]
fn grow(out: &mut Vec<u8>, len: usize) -> &mut [u8] {
    let at = out.len();
    out.resize(at + len, b'0');
    &mut out[at..]
}

/// Decimal digits of `n` (1 for 0).
#[inline]
fn digit_count(n: u64) -> usize {
    n.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// Fills `dst` with the last `dst.len()` decimal digits of `n`, zeros in front.
#[inline]
fn put_digits(dst: &mut [u8], mut n: u64) {
    let mut i = dst.len();
    while i >= 2 {
        let d = (n % 100) as usize * 2;
        n /= 100;
        dst[i - 2..i].copy_from_slice(&PAIRS[d..d + 2]);
        i -= 2;
    }
    if i == 1 {
        dst[0] = b'0' + (n % 10) as u8;
    }
}

/// Appends `n` in decimal, as `write!(out, "{n}")`.
pub fn uint(out: &mut Vec<u8>, n: u64) {
    put_digits(grow(out, digit_count(n)), n);
}

/// Appends `n` in decimal, as `write!(out, "{n}")`.
pub fn int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    uint(out, n.unsigned_abs());
}

/// Where report text goes: appended to a buffer, or only measured (trace.json's first
/// pass sizes every slice and flow without writing it). One formatter serves both, so a
/// measured length is the written one.
pub trait Text {
    fn bytes(&mut self, b: &[u8]);
    /// [`fixed`].
    fn fixed(&mut self, x: f64, prec: usize);
    /// [`uint`].
    fn uint(&mut self, n: u64);
    /// [`int`].
    fn int(&mut self, n: i64) {
        if n < 0 {
            self.bytes(b"-");
        }
        self.uint(n.unsigned_abs());
    }
}

impl Text for Vec<u8> {
    fn bytes(&mut self, b: &[u8]) {
        self.extend_from_slice(b);
    }
    fn fixed(&mut self, x: f64, prec: usize) {
        fixed(self, x, prec);
    }
    fn uint(&mut self, n: u64) {
        uint(self, n);
    }
}

/// The length of the text it is given, nothing kept.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Measure(pub usize);

impl Text for Measure {
    fn bytes(&mut self, b: &[u8]) {
        self.0 += b.len();
    }
    fn fixed(&mut self, x: f64, prec: usize) {
        self.0 += fixed_len(x, prec);
    }
    fn uint(&mut self, n: u64) {
        self.0 += digit_count(n);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `std::fmt` oracle: every value the reports can meet formats alike.
    fn check(x: f64) {
        for prec in [0, 1, 4, 9] {
            let mut fast = Vec::new();
            fixed(&mut fast, x, prec);
            assert_eq!(
                fast,
                format!("{x:.prec$}").as_bytes(),
                "{x:e} at {prec} decimals"
            );
            let mut m = Measure(3);
            m.fixed(x, prec);
            assert_eq!(m.0, 3 + fast.len(), "{x:e} at {prec} decimals, measured");
        }
    }

    #[test]
    fn fixed_is_std_fmt() {
        for x in [
            0.0,
            -0.0,
            1.0,
            -1e-12,
            0.5,
            1.5,
            2.5,
            0.25,
            0.0009765625,
            0.0029296875,
            0.00048828125,
            1e-9,
            5e-10,
            999_999_999.999_999_9,
            1e9,
            -1e9,
            123_456_789.123_456_79,
            f64::MIN_POSITIVE,
            5e-324,
            f64::MAX,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            check(x);
        }
        // Ties at 9 decimals: odd multiples of 2^-k·10^-9 that are exactly representable.
        for k in 1..12 {
            for j in 0..2000u64 {
                let x = (2 * j + 1) as f64 / (1u64 << k) as f64 * 1e-9;
                check(x);
                check(j as f64 + 0.5);
                check((2 * j + 1) as f64 / 1024.0);
            }
        }
        // Pseudo-random doubles over every exponent a report can print, and integers of
        // nanoseconds scaled as the reports scale them.
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits(s);
            check(x);
            check(x.abs() % 1e4);
            check((s % 10_000_000_000_000) as f64 * 1e-9);
            check((s >> 40) as f64 / (1u64 << (s % 50)) as f64);
        }
    }

    #[test]
    fn integers_are_std_fmt() {
        for n in [0, 1, 9, 10, 99, 100, u64::MAX, 1 << 40, 12_345_678_901] {
            let mut a = Vec::new();
            uint(&mut a, n);
            assert_eq!(a, n.to_string().as_bytes());
        }
        // Every digit count, at both its ends.
        for k in 0..20 {
            let p = 10u64.pow(k);
            // (10^19·9 does not fit: the last is checked, not wrapped.)
            let top = p.checked_mul(9).and_then(|x| x.checked_add(p - 1));
            for n in [Some(p - 1), Some(p), Some(p + 1), top]
                .into_iter()
                .flatten()
            {
                let mut a = b"x".to_vec();
                uint(&mut a, n);
                assert_eq!(a, format!("x{n}").as_bytes());
                let mut m = Measure(1);
                m.uint(n);
                assert_eq!(m.0, a.len(), "{n} measured");
            }
        }
        for n in [0, -1, i64::MIN, i64::MAX, -1500, 42] {
            let mut a = Vec::new();
            int(&mut a, n);
            assert_eq!(a, n.to_string().as_bytes());
            let mut m = Measure(0);
            m.int(n);
            assert_eq!(m.0, a.len(), "{n} measured");
        }
    }
}
