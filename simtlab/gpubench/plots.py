"""The bandwidth plots live with the other plots, in ``simtlab/plots/bandwidth.py``."""

from ..plots.bandwidth import plot_bandwidth, plot_sweep

__all__ = ["plot_bandwidth", "plot_sweep"]
