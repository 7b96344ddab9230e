//! The checks of the core's fuzz targets. Each takes arbitrary bytes, runs
//! the core on what they describe, and panics (the fuzzer's signal) only
//! where the core breaks a promise: a panic or an arithmetic overflow of
//! its own (the targets and the regression tests build with overflow
//! checks), a schedule that breaks a constraint or misstates its cost, an
//! answer that differs between solvers where it may not, an error that
//! is not the typed one the inputs call for, or an encoding that does not
//! decode to itself.
//!
//! Shared by the fuzz targets (`fuzz/fuzz_targets/`) and by
//! `fuzz/checks/tests/regressions.rs`, which replays the committed corpus
//! and crash inputs on stable Rust.
//!
//! - `decode`: the wire format's decoding ([`wire_decode`]);
//! - `chains`: random chains handed straight to the solvers ([`solvers`]);
//! - `pipeline`: specs, models and coefficients received in the wire
//!   format, built, solved and encoded ([`schedule_pipeline`]).

mod chains;
mod decode;
mod pipeline;

pub use chains::{solvers, Chain};
pub use decode::wire_decode;
pub use pipeline::{coefficients_from, schedule_pipeline, spec_from};

use hwwfc_core::wire::{self, Message, WireError};

/// Layer capacity of the solvers on fuzzed problems.
pub const LAYERS: usize = 16;
/// Domain words of the random chains (128 states a layer).
pub const CHAIN_WORDS: usize = 2;
/// Domain words of the built problems (the CUDA space has 480 states).
pub const BUILD_WORDS: usize = 8;
/// Most combinations handed to the exhaustive oracle.
pub const ORACLE_LIMIT: u64 = 20_000;

/// Reads fuzz bytes front to back; zeros once they run out, so every input
/// describes some instance.
pub struct Bytes<'a> {
    data: &'a [u8],
}

impl<'a> Bytes<'a> {
    /// A reader of `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data }
    }

    /// The next byte.
    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    /// The next two bytes, little-endian.
    pub fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }

    /// The next four bytes, little-endian.
    pub fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    /// The next eight bytes, little-endian.
    pub fn u64(&mut self) -> u64 {
        (self.u32() as u64) | ((self.u32() as u64) << 32)
    }

    /// A number in `0..n` (`n` at least 1).
    pub fn below(&mut self, n: usize) -> usize {
        self.u8() as usize % n.max(1)
    }

    /// One bit.
    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }
}

/// SplitMix64: fills the large tables of an instance from one seed.
pub struct SplitMix(u64);

impl SplitMix {
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// True with probability `p / 256`.
    pub fn chance(&mut self, p: u8) -> bool {
        ((self.next_u64() & 0xff) as u8) < p
    }
}

/// `value` in the wire format, in a buffer of its `MAX_ENCODED_LEN`.
fn encode<T: Message>(value: &T) -> Result<Vec<u8>, WireError> {
    let mut buf = vec![0u8; T::MAX_ENCODED_LEN];
    wire::to_slice(value, &mut buf).map(|b| b.to_vec())
}
