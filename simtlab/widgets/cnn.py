"""Chapter 8's main widget: pick an image of the shipped Fashion-MNIST sample and a layer, and see
what the course's kernels (run by the emulator) made of it, checked against the NumPy reference."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..plots.cnn import LAYERS, plot_activations
from .figure_image import FigureImage, panel


def cnn_widget(image: int = 0, layer: str = "conv1", choices: int = 12):
    """Dropdowns ``image`` (one of the first ``choices`` sample images, one per class in turn) and
    ``layer``. Each image runs once through the emulated network (about 0.1 s); switching layers
    only redraws."""
    from ..cnn_data import CLASSES, load_sample, load_weights, to_input
    from ..kernels import cnn

    sample, params = load_sample(), load_weights()
    # one image of each class in turn, so the first few choices show different classes
    by_class = [np.flatnonzero(sample.labels == c) for c in range(len(CLASSES))]
    order = [by_class[j % len(CLASSES)][j // len(CLASSES)] for j in range(choices)]
    options = [(f"{i}: {CLASSES[sample.labels[k]]}", int(k)) for i, k in enumerate(order)]
    pick = widgets.Dropdown(options=options, value=options[image][1], description="image")
    which = widgets.Dropdown(options=list(LAYERS), value=layer, description="layer")
    summary = widgets.HTML()
    view = FigureImage()
    cache: dict = {}

    def passes(k):
        if k not in cache:
            x = to_input(sample.images[k])
            cache[k] = (cnn.emulate_forward(params, x), cnn.forward_cpu(params, x))
        return cache[k]

    def redraw(*_):
        k = pick.value
        got, ref = passes(k)
        diff = float(np.max(np.abs(got[which.value] - ref[which.value])))
        predicted = int(got["labels"][0])
        truth = int(sample.labels[k])
        verdict = "right" if predicted == truth else "wrong"
        summary.value = (f"predicted <b>{CLASSES[predicted]}</b> "
                         f"({got['softmax'][0, predicted]:.0%}), true class {CLASSES[truth]}: {verdict}. "
                         f"Layer {which.value}: output {tuple(got[which.value].shape[1:])}, "
                         f"largest difference from the NumPy reference {diff:.1e}")
        view.show(plot_activations(sample.images[k], got, which.value, CLASSES), layout_key="cnn_widget")

    pick.observe(redraw, names="value")
    which.observe(redraw, names="value")
    redraw()
    return panel([pick, which], view, summary, image=pick, layer=which)
