//! Target IDs (placeholder until written).
