//! Domains: the states a layer may still take, as fixed-capacity bitsets.
//!
//! A [`Domain<W>`] holds up to `64 * W` states in `W` machine words, so
//! intersection, difference and counting are a few word operations and a
//! domain is `Copy`.

use crate::state::StateIndex;

/// A set of state indices below `64 * W`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Domain<const W: usize> {
    words: [u64; W],
}

impl<const W: usize> core::fmt::Debug for Domain<W> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

#[cfg(feature = "defmt")]
impl<const W: usize> defmt::Format for Domain<W> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "Domain({=usize} states)", self.len());
    }
}

impl<const W: usize> Default for Domain<W> {
    fn default() -> Self {
        Self::EMPTY
    }
}

impl<const W: usize> Domain<W> {
    /// Most states a domain can hold.
    pub const CAPACITY: usize = 64 * W;

    /// The empty domain.
    pub const EMPTY: Self = Domain { words: [0; W] };

    /// The domain `{0, 1, ..., n - 1}`; `None` if `n` exceeds the capacity.
    pub fn first(n: usize) -> Option<Self> {
        if n > Self::CAPACITY {
            return None;
        }
        let mut d = Self::EMPTY;
        for (w, word) in d.words.iter_mut().enumerate() {
            let lo = w * 64;
            if n >= lo + 64 {
                *word = u64::MAX;
            } else if n > lo {
                *word = (1u64 << (n - lo)) - 1;
            }
        }
        Some(d)
    }

    /// The domain `{s}`; empty if `s` is out of range.
    pub fn single(s: StateIndex) -> Self {
        let mut d = Self::EMPTY;
        d.insert(s);
        d
    }

    /// Adds `s`; returns false (and changes nothing) if out of range.
    pub fn insert(&mut self, s: StateIndex) -> bool {
        let i = s as usize;
        match self.words.get_mut(i / 64) {
            Some(word) => {
                *word |= 1u64 << (i % 64);
                true
            }
            None => false,
        }
    }

    /// Removes `s`.
    pub fn remove(&mut self, s: StateIndex) {
        let i = s as usize;
        if let Some(word) = self.words.get_mut(i / 64) {
            *word &= !(1u64 << (i % 64));
        }
    }

    /// Whether `s` is in the domain.
    pub fn contains(&self, s: StateIndex) -> bool {
        let i = s as usize;
        self.words.get(i / 64).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Number of states.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the domain is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// The smallest state, if any.
    pub fn first_state(&self) -> Option<StateIndex> {
        self.iter().next()
    }

    /// States in both `self` and `other`.
    #[must_use]
    pub fn intersection(&self, other: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words.iter()) {
            *a &= *b;
        }
        out
    }

    /// States in `self` but not in `other`.
    #[must_use]
    pub fn difference(&self, other: &Self) -> Self {
        let mut out = *self;
        for (a, b) in out.words.iter_mut().zip(other.words.iter()) {
            *a &= !*b;
        }
        out
    }

    /// Whether the two domains share a state.
    pub fn intersects(&self, other: &Self) -> bool {
        self.words.iter().zip(other.words.iter()).any(|(a, b)| a & b != 0)
    }

    /// The states in increasing order.
    pub fn iter(&self) -> Iter<'_, W> {
        Iter { words: &self.words, word: 0, bits: self.words.first().copied().unwrap_or(0) }
    }
}

/// Iterator over a domain's states in increasing order.
pub struct Iter<'a, const W: usize> {
    words: &'a [u64; W],
    word: usize,
    bits: u64,
}

impl<const W: usize> Iterator for Iter<'_, W> {
    type Item = StateIndex;

    fn next(&mut self) -> Option<StateIndex> {
        loop {
            if self.bits != 0 {
                let bit = self.bits.trailing_zeros() as usize;
                self.bits &= self.bits - 1;
                // Indices stay below 64 * W, which fits in a StateIndex for
                // every capacity the crate accepts (see `lib.rs`).
                return Some((self.word * 64 + bit) as StateIndex);
            }
            self.word += 1;
            self.bits = *self.words.get(self.word)?;
        }
    }
}

impl<'a, const W: usize> IntoIterator for &'a Domain<W> {
    type Item = StateIndex;
    type IntoIter = Iter<'a, W>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_and_iter() {
        let d = Domain::<2>::first(70).unwrap();
        assert_eq!(d.len(), 70);
        assert_eq!(d.iter().last(), Some(69));
        assert!(Domain::<2>::first(129).is_none());
        assert_eq!(Domain::<2>::first(128).unwrap().len(), 128);
        assert!(Domain::<1>::first(0).unwrap().is_empty());
    }

    #[test]
    fn set_ops() {
        let mut a = Domain::<2>::EMPTY;
        for s in [1, 5, 64, 100] {
            assert!(a.insert(s));
        }
        assert!(!a.insert(128));
        let b = Domain::<2>::single(64);
        assert_eq!(a.intersection(&b), b);
        assert_eq!(a.difference(&b).iter().collect::<heapless::Vec<_, 8>>().as_slice(), &[1, 5, 100]);
        assert!(a.intersects(&b));
        a.remove(64);
        assert!(!a.intersects(&b));
        assert_eq!(a.first_state(), Some(1));
    }
}
