//! 64-byte aligned buffers.

/// A `len`-element buffer whose first element sits on a 64-byte boundary (a `Vec` with a
/// little slack, sliced at the aligned offset), as inference engines allocate tensors.
pub struct Aligned<T> {
    v: Vec<T>,
    off: usize,
    len: usize,
}

impl<T: Copy + Default> Aligned<T> {
    /// `len` copies of `value`.
    pub fn filled(len: usize, value: T) -> Aligned<T> {
        let pad = 64 / std::mem::size_of::<T>().max(1);
        let v = vec![value; len + pad];
        let off = v.as_ptr().align_offset(64).min(pad);
        Aligned { v, off, len }
    }

    /// The elements of `src`, aligned.
    pub fn from_slice(src: &[T]) -> Aligned<T> {
        let mut a = Aligned::filled(src.len(), T::default());
        a.as_mut_slice().copy_from_slice(src);
        a
    }

    /// The elements.
    pub fn as_slice(&self) -> &[T] {
        &self.v[self.off..self.off + self.len]
    }

    /// The elements, mutable.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.v[self.off..self.off + self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers() {
        for len in [0, 1, 5, 1000] {
            let a = Aligned::filled(len, 7u32);
            assert_eq!(a.as_slice().len(), len);
            assert_eq!(a.as_slice().as_ptr() as usize % 64, 0);
            let b = Aligned::from_slice(&[1.5f32, 2.5]);
            assert_eq!(b.as_slice(), &[1.5, 2.5]);
            assert_eq!(b.as_slice().as_ptr() as usize % 64, 0);
        }
    }
}
