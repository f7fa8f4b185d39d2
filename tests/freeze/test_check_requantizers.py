"""passes.check_requantizers: every quantizer ending float ops has an exact hardware form."""

import pytest
from freeze_models import quantize, run

from edgebnn.freeze import FreezeError
from edgebnn.freeze.passes import check_requantizers


@pytest.mark.parametrize(
    "q, words",
    [
        ("ste_tern(ternary_weight_networks=True)", "statistics of each batch"),
        ("partial('ste_sign', [0])", "leaves the channels outside [0] real-valued"),
        ("noop(8)", "its quantizer cannot be deployed"),
    ],
)
def test_undeployable_requantizers_are_refused_by_layer(q, words):
    with pytest.raises(FreezeError, match=r"layer 'q' \(QuantActivation\)") as err:
        run(check_requantizers.run, [quantize(q)])
    assert words in str(err.value)


def test_deployable_requantizers_pass():
    items = [quantize("ste_sign"), quantize("quantized_bits(4, 2)"), quantize("ste_tern(threshold_value=0.5)")]
    assert run(check_requantizers.run, items)[0] == items
