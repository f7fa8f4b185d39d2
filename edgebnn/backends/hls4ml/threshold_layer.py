"""edgebnn's ``EdgebnnThreshold`` hls4ml layer (the lowering of a graph ``threshold`` node), its
config and function-call templates, and their registration with hls4ml.

The C++ is ``hls_templates/nnet_edgebnn_threshold.h``: an array and an hls::stream version.
"""

from __future__ import annotations

from hls4ml.backends import get_backend
from hls4ml.backends.template import FunctionCallTemplate, LayerConfigTemplate
from hls4ml.model.attributes import Attribute, TypeAttribute, WeightAttribute
from hls4ml.model.layers import Layer, layer_map, register_layer
from hls4ml.model.optimizer.optimizer import optimizer_map

from ...resources import templates_dir
from .ops.threshold import THRESHOLD_CLASS

THRESHOLD_HEADER = "nnet_edgebnn_threshold.h"


class EdgebnnThreshold(Layer):
    """hls4ml layer of a graph ``threshold`` node: y = levels[c, #{k: thresholds[c, k] <= x}]."""

    _expected_attributes = [  # noqa: RUF012 - hls4ml's Layer API reads this class list
        Attribute("n_in"),
        Attribute("n_chan"),
        Attribute("n_thresholds"),
        Attribute("search_steps"),
        WeightAttribute("thresholds"),
        WeightAttribute("levels"),
        TypeAttribute("thresholds"),
        TypeAttribute("levels"),
    ]

    def initialize(self):
        self.add_output_variable(list(self.get_input_variable().shape))
        # precisions come from the layer's config: the input's type and the node's type
        self.add_weights_variable(name="thresholds", var_name="t{index}", data="thresholds")
        self.add_weights_variable(name="levels", var_name="l{index}", data="levels")


class EdgebnnThresholdConfigTemplate(LayerConfigTemplate):
    def __init__(self):
        super().__init__(EdgebnnThreshold)
        self.template = """struct config{index} : nnet::edgebnn_threshold_config {{
    static const unsigned n_in = {n_in};
    static const unsigned n_chan = {n_chan};
    static const unsigned n_thresholds = {n_thresholds};
    static const unsigned search_steps = {search_steps};
    static const unsigned io_type = nnet::{iotype};
    static const unsigned reuse_factor = {reuse};
    typedef {thresholds_t.name} threshold_t;
    typedef {levels_t.name} level_t;
}};\n"""

    def format(self, node):
        return self.template.format(**self._default_config_params(node))


class EdgebnnThresholdFunctionTemplate(FunctionCallTemplate):
    def __init__(self):
        super().__init__(EdgebnnThreshold, include_header=[f"nnet_utils/{THRESHOLD_HEADER}"])
        self.template = "nnet::edgebnn_threshold<{input_t}, {output_t}, {config}>({input}, {output}, {t}, {l});"

    def format(self, node):
        params = self._default_function_params(node)
        params["t"] = node.get_weights("thresholds").name
        params["l"] = node.get_weights("levels").name
        return self.template.format(**params)


def register(backends) -> None:
    """Teach hls4ml the threshold layer, its templates and its header (for each backend name in
    ``backends``). Idempotent: hls4ml's registries are global and refuse a second registration,
    so each step checks first."""
    if THRESHOLD_CLASS not in layer_map:
        register_layer(THRESHOLD_CLASS, EdgebnnThreshold)
    # templates go to the Vivado backend only: the Vitis flow applies vivado:apply_templates too
    vivado = get_backend("Vivado")
    for template in (EdgebnnThresholdConfigTemplate, EdgebnnThresholdFunctionTemplate):
        if f"vivado:{template().get_name()}" not in optimizer_map:
            vivado.register_template(template)
    header = str(templates_dir() / THRESHOLD_HEADER)
    for name in backends:
        get_backend(name).register_source(header)  # kept in a dict by destination: idempotent
