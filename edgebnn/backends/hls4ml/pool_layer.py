"""edgebnn's ``EdgebnnPool2D`` hls4ml layer: 2-D max or average pooling with strides other than
the pool size (overlapping or gapped windows), which hls4ml's own io_stream pooling asserts
against. It is hls4ml's ``Pooling2D`` (the same attributes, accumulator and implementation
settings, and hls4ml's ``pooling2d_config`` struct) with its own function call; the C++ is
``hls_templates/nnet_edgebnn_pool.h`` (io_parallel: hls4ml's ``pooling2d_cl``; io_stream:
hls4ml's line-buffer window ``compute_pool_buffer_2d`` read over the whole image).
"""

from __future__ import annotations

from hls4ml.backends import get_backend
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.backends.vivado.passes.pooling_templates import pooling2d_config_template
from hls4ml.model.layers import Pooling2D, layer_map, register_layer
from hls4ml.model.optimizer.optimizer import optimizer_map

from ...resources import templates_dir
from .ops._pooling import POOL_CLASS

POOL_HEADER = "nnet_edgebnn_pool.h"


class EdgebnnPool2D(Pooling2D):
    """hls4ml's ``Pooling2D`` whose pool op (Max, Average) is given as an attribute (hls4ml reads
    it from the Keras class name) and whose function is ``nnet::edgebnn_pool2d``."""

    def initialize(self):
        self.add_output_variable([self.get_attr("out_height"), self.get_attr("out_width"), self.get_attr("n_filt")])


class EdgebnnPool2DConfigTemplate(LayerConfigTemplate):
    def __init__(self):
        super().__init__(EdgebnnPool2D)
        self.template = pooling2d_config_template

    def format(self, node):
        return self.template.format(**self._default_config_params(node))


class EdgebnnPool2DFunctionTemplate(FunctionCallTemplate):
    def __init__(self):
        super().__init__(EdgebnnPool2D, include_header=[f"nnet_utils/{POOL_HEADER}"])
        self.template = "nnet::edgebnn_pool2d<{input_t}, {output_t}, {config}>({input}, {output});"

    def format(self, node):
        return self.template.format(**self._default_function_params(node))


def register(backends) -> None:
    """Teach hls4ml the pool layer, its templates and its header (for each backend name in
    ``backends``); idempotent, as ``threshold_layer.register``."""
    if POOL_CLASS not in layer_map:
        register_layer(POOL_CLASS, EdgebnnPool2D)
    vivado = get_backend("Vivado")
    for template in (EdgebnnPool2DConfigTemplate, EdgebnnPool2DFunctionTemplate):
        if f"vivado:{template().get_name()}" not in optimizer_map:
            vivado.register_template(template)
    header = str(templates_dir() / POOL_HEADER)
    for name in backends:
        get_backend(name).register_source(header)
