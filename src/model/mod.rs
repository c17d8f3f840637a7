//! Interconnect, penalty and collective models (pure; no MPI).
