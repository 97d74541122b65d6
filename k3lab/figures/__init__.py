"""Figures, one module per finding; each function returns a matplotlib Figure."""
