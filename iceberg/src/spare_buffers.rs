//! Byte buffers a thread reuses from one table commit to the next. A commit's value columns
//! hold up to `max_bytes_per_commit` of data; taking fresh memory for them every commit, and
//! giving it back after, made the kernel zero and map the same hundreds of megabytes again
//! each time (page faults were about a third of the writer's CPU in a profile of Avro
//! columns). Buffers come back in the order they were given (a table's leaves, in their
//! order), so each leaf tends to get the buffer it grew last time.

use std::cell::RefCell;
use std::collections::VecDeque;

/// The most capacity kept spare per thread.
const SPARE_MAX_BYTES: usize = 256 << 20;

#[derive(Default)]
struct Spare {
    buffers: VecDeque<Vec<u8>>,
    bytes: usize,
}

thread_local! {
    static SPARE: RefCell<Spare> = RefCell::new(Spare::default());
}

/// An empty buffer, with the capacity of one given back earlier if any.
pub fn take() -> Vec<u8> {
    SPARE.with_borrow_mut(|spare| {
        let buffer = spare.buffers.pop_front().unwrap_or_default();
        spare.bytes -= buffer.capacity();
        buffer
    })
}

/// Keeps `buffer`'s capacity for a later `take`, within the thread's bound.
pub fn give(mut buffer: Vec<u8>) {
    SPARE.with_borrow_mut(|spare| {
        if buffer.capacity() == 0 || spare.bytes + buffer.capacity() > SPARE_MAX_BYTES {
            return;
        }
        buffer.clear();
        spare.bytes += buffer.capacity();
        spare.buffers.push_back(buffer);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_in_order_and_within_the_bound() {
        give(Vec::with_capacity(10));
        give(Vec::with_capacity(20));
        give(Vec::with_capacity(SPARE_MAX_BYTES));
        assert!(take().capacity() >= 10);
        assert!(take().capacity() >= 20);
        assert_eq!(take().capacity(), 0, "the one past the bound was not kept");
    }
}
