//! The PMPI_PREDICT_* environment variables.
