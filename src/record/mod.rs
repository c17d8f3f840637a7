//! Recording: per-thread preallocated buffers and the spool writer that drains them.
//! The hot-path entry is [`push`]: one append to the calling thread's ring.

pub mod netsample;
pub mod ring;
pub mod spool;

use crate::trace::Record;
use ring::{Registry, Ring};
use std::cell::Cell;
use std::sync::OnceLock;

static REGISTRY: OnceLock<Registry> = OnceLock::new();

thread_local! {
    static RING: Cell<Option<&'static Ring>> = const { Cell::new(None) };
}

/// Sets up the registry; rings are `capacity` records each, at most `max_threads`.
pub fn init(capacity: usize, max_threads: usize) -> &'static Registry {
    REGISTRY.get_or_init(|| Registry::new(capacity, max_threads))
}

/// The registry, once initialised.
pub fn registry() -> Option<&'static Registry> {
    REGISTRY.get()
}

/// The calling thread's ring, registering one on the thread's first call.
#[inline]
pub fn thread_ring() -> Option<&'static Ring> {
    RING.try_with(|c| match c.get() {
        Some(r) => Some(r),
        None => {
            let r = REGISTRY.get()?.register(None)?;
            c.set(Some(r));
            Some(r)
        }
    })
    .ok()
    .flatten()
}

/// Appends a record to the calling thread's ring (stamping its thread number).
#[inline]
pub fn push(mut r: Record) {
    if let Some(ring) = thread_ring() {
        r.thread = ring.thread;
        ring.push(r);
    }
}

/// Appends a record keeping its thread number (completions of operations posted by
/// another thread).
#[inline]
pub fn push_as_is(r: Record) {
    if let Some(ring) = thread_ring() {
        ring.push(r);
    }
}
