"""Interactive widgets: each is built by one function, and its controls are on ``.controls``."""

from .amdahl import amdahl_widget
from .cnn import cnn_widget
from .conv import unroll_widget
from .device_panel import device_panel
from .divergence import divergence_widget
from .gemm import gemm_widget
from .mapping import mapping_widget
from .memory_access import warp_access_widget
from .occupancy import occupancy_widget
from .patterns import patterns_widget
from .reduction import reduction_widget
from .scan import scan_widget
from .tensor_cores import fragment_widget

__all__ = ["amdahl_widget", "cnn_widget", "device_panel", "divergence_widget", "fragment_widget", "gemm_widget", "mapping_widget",
           "warp_access_widget", "occupancy_widget", "patterns_widget",
           "reduction_widget", "scan_widget", "unroll_widget"]
