"""edgebnn's ``EdgebnnPad2D`` hls4ml layer (the lowering of a graph ``pad2d`` node: constant
padding of any value, where hls4ml's ZeroPadding2D pads zeros only) and ``EdgebnnPad1D`` (the
same layer of one row with an (L, C) result: a ``zeropad1d`` node of a non-zero code), their
config and function-call templates, and their registration with hls4ml.

The C++ is ``hls_templates/nnet_edgebnn_pad.h``: an array and an hls::stream version.
"""

from __future__ import annotations

from hls4ml.backends import get_backend
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.model.attributes import Attribute
from hls4ml.model.layers import Layer, layer_map, register_layer
from hls4ml.model.optimizer.optimizer import optimizer_map

from ...resources import templates_dir
from .ops import pad2d, zeropad1d

PAD_HEADER = "nnet_edgebnn_pad.h"


class EdgebnnPad2D(Layer):
    """hls4ml layer of a graph ``pad2d`` node: rows and columns of ``pad_value`` around the input."""

    _expected_attributes = [  # noqa: RUF012 - hls4ml's Layer API reads this class list
        Attribute("n_chan"),
        Attribute("in_height"),
        Attribute("in_width"),
        Attribute("out_height"),
        Attribute("out_width"),
        Attribute("pad_top"),
        Attribute("pad_left"),
        Attribute("pad_value", value_type=str),
    ]

    def initialize(self):
        self.add_output_variable([self.get_attr("out_height"), self.get_attr("out_width"), self.get_attr("n_chan")])


class EdgebnnPad1D(EdgebnnPad2D):
    """hls4ml layer of a graph ``zeropad1d`` node of a non-zero code: ``EdgebnnPad2D`` of one row
    (``in_height`` = ``out_height`` = 1, ``pad_top`` = 0) whose result is (L, C), the shape a
    following Conv1D reads."""

    def initialize(self):
        self.add_output_variable([self.get_attr("out_width"), self.get_attr("n_chan")])


PAD_LAYERS = (EdgebnnPad2D, EdgebnnPad1D)


class EdgebnnPad2DConfigTemplate(LayerConfigTemplate):
    def __init__(self):
        super().__init__(PAD_LAYERS)
        self.template = """struct config{index} : nnet::edgebnn_pad2d_config {{
    static const unsigned n_chan = {n_chan};
    static const unsigned in_height = {in_height};
    static const unsigned in_width = {in_width};
    static const unsigned out_height = {out_height};
    static const unsigned out_width = {out_width};
    static const unsigned pad_top = {pad_top};
    static const unsigned pad_left = {pad_left};
    static constexpr double pad_value = {pad_value};
}};\n"""

    def format(self, node):
        return self.template.format(**self._default_config_params(node))


class EdgebnnPad2DFunctionTemplate(FunctionCallTemplate):
    def __init__(self):
        super().__init__(PAD_LAYERS, include_header=[f"nnet_utils/{PAD_HEADER}"])
        self.template = "nnet::edgebnn_pad2d<{input_t}, {output_t}, {config}>({input}, {output});"

    def format(self, node):
        return self.template.format(**self._default_function_params(node))


def register(backends) -> None:
    """Teach hls4ml the pad layers, their templates and their header (for each backend name in
    ``backends``); idempotent, as ``threshold_layer.register``."""
    for name, cls in ((pad2d.PAD_CLASS, EdgebnnPad2D), (zeropad1d.PAD_CLASS, EdgebnnPad1D)):
        if name not in layer_map:
            register_layer(name, cls)
    vivado = get_backend("Vivado")
    for template in (EdgebnnPad2DConfigTemplate, EdgebnnPad2DFunctionTemplate):
        if f"vivado:{template().get_name()}" not in optimizer_map:
            vivado.register_template(template)
    header = str(templates_dir() / PAD_HEADER)
    for name in backends:
        get_backend(name).register_source(header)
