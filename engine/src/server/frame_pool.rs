//! Buffers for request frames, reused once every slice of a request is dropped. A fresh buffer
//! must be zeroed before a read can fill it (safe Rust reads only into initialised memory):
//! at max produce that zeroing was 5.6 % of the broker, on top of faulting the pages in.
//! A reused buffer was zeroed once, when it was made.
//!
//! Each thread keeps its own free buffers, in power-of-two sizes from `SMALLEST` to `LARGEST`
//! bytes, at most `KEPT_BYTES` of them in all; a request's slices give their buffer back to
//! the thread that drops the last of them. Frames outside those sizes are not pooled.

use std::cell::RefCell;

use bytes::Bytes;

/// Smaller frames are cheap to allocate and zero.
pub const SMALLEST: usize = 16 << 10;
/// Larger frames grow as they arrive instead (see `connection::read_frame`).
pub const LARGEST: usize = 1 << 20;
/// Free buffers one thread keeps; more are freed.
const KEPT_BYTES: usize = 64 << 20;
const SIZES: usize = (LARGEST / SMALLEST).trailing_zeros() as usize + 1;

#[derive(Default)]
struct Pool {
    free: [Vec<Vec<u8>>; SIZES],
    kept_bytes: usize,
}

thread_local! {
    static POOL: RefCell<Pool> = RefCell::default();
}

/// A pooled buffer being filled with one frame of `len` bytes.
pub struct FrameBuffer {
    buf: Vec<u8>,
    len: usize,
}

impl FrameBuffer {
    /// A buffer for a frame of `len` bytes, `SMALLEST..=LARGEST`.
    pub fn take(len: usize) -> FrameBuffer {
        debug_assert!((SMALLEST..=LARGEST).contains(&len));
        let class = size_class(len);
        let reused = POOL.with(|pool| {
            let mut pool = pool.borrow_mut();
            let buf = pool.free[class].pop()?;
            pool.kept_bytes -= buf.len();
            Some(buf)
        });
        let buf = reused.unwrap_or_else(|| vec![0; SMALLEST << class]);
        FrameBuffer { buf, len }
    }

    /// The room the frame is read into.
    pub fn room(&mut self) -> &mut [u8] {
        &mut self.buf[..self.len]
    }

    /// The frame, sharing this buffer; it goes back to the pool when the last slice is dropped.
    pub fn freeze(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for FrameBuffer {
    fn as_ref(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

impl Drop for FrameBuffer {
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        // During thread teardown the pool is gone and the buffer is simply freed.
        let _ = POOL.try_with(|pool| {
            let mut pool = pool.borrow_mut();
            if pool.kept_bytes + buf.len() <= KEPT_BYTES {
                pool.kept_bytes += buf.len();
                pool.free[size_class(buf.len())].push(buf);
            }
        });
    }
}

/// The index of the smallest power-of-two size holding `len` bytes.
fn size_class(len: usize) -> usize {
    (len.max(SMALLEST).next_power_of_two() / SMALLEST).trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_hold_their_frames() {
        assert_eq!(size_class(SMALLEST), 0);
        assert_eq!(size_class(SMALLEST + 1), 1);
        assert_eq!(size_class(LARGEST), SIZES - 1);
        for len in [SMALLEST, 20_000, 100_000, 300_000, LARGEST] {
            assert!(SMALLEST << size_class(len) >= len);
            assert!(SMALLEST << size_class(len) < 2 * len.max(SMALLEST));
        }
    }

    #[test]
    fn a_buffer_returns_to_the_pool_when_its_last_slice_is_dropped() {
        let mut first = FrameBuffer::take(100_000);
        first.room().fill(7);
        let frame = first.freeze();
        let slice = frame.slice(10..20);
        drop(frame);
        assert_eq!(&slice[..], &[7; 10]);
        let kept = || POOL.with(|pool| pool.borrow().kept_bytes);
        assert_eq!(kept(), 0, "a slice still holds it");
        drop(slice);
        assert_eq!(kept(), SMALLEST << size_class(100_000));
        // Reused for a frame of the same size class, with only its own length visible.
        let mut second = FrameBuffer::take(90_000);
        assert_eq!(kept(), 0);
        assert_eq!(second.room().len(), 90_000);
        assert_eq!(second.freeze().len(), 90_000);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number_of_bytes() {
        let frames: Vec<Bytes> = (0..KEPT_BYTES / LARGEST + 4)
            .map(|_| FrameBuffer::take(LARGEST).freeze())
            .collect();
        drop(frames);
        POOL.with(|pool| assert!(pool.borrow().kept_bytes <= KEPT_BYTES));
    }
}
