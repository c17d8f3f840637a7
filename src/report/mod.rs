//! Reports: calls.csv, summary.json.
