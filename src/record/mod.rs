//! Recording: per-thread buffers and the spool writer.
