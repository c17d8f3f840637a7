//! PMPI interposers.
