"""Benchmarks that write their figures to bench/results/ (docs/benchmarks.md)."""
