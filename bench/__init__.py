"""Benchmarks (scripts, not tests): see docs/performance.md."""
