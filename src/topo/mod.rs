//! Node identity and clocks.
