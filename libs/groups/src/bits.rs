//! A fixed-size bit set over `0..len`, for "seen this rank already" checks.

/// One bit per rank of a group.
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    /// All clear, for ranks `0..len`.
    pub(crate) fn new(len: usize) -> Self {
        Bits(vec![0; len.div_ceil(64)])
    }

    /// Sets bit `i`; returns whether it was set already.
    pub(crate) fn test_and_set(&mut self, i: usize) -> bool {
        let (word, bit) = (i / 64, 1u64 << (i % 64));
        let was = self.0[word] & bit != 0;
        self.0[word] |= bit;
        was
    }

    /// Whether bit `i` is set.
    pub(crate) fn get(&self, i: usize) -> bool {
        self.0[i / 64] & (1u64 << (i % 64)) != 0
    }
}
