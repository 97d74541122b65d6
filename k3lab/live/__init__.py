"""Measuring on hardware: bench_serving sweeps against a running server, kernel timings."""
