"""Figures, one module per finding; each function returns a matplotlib Figure."""


def plain_log_ticks(axis) -> None:
    """Plain tick labels on a log axis (``0.1``, ``2``, ``20``, ``1,000``; never ``2×10¹``): a
    label at 1, 2 and 5 of each decade, none on the other minor ticks."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    def label(v, _):
        return f"{v:,.0f}" if v >= 1 else f"{v:.6f}".rstrip("0").rstrip(".")

    axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(FuncFormatter(label))
    axis.set_minor_formatter(NullFormatter())
