import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, os.path.dirname(__file__))  # tests/graphs.py

import pytest


@pytest.fixture
def xla_allowed():
    """Keras drops jit_compile=True while TensorFlow's op determinism is on; see fuzz.xla_allowed."""
    from edgebnn.fuzz import xla_allowed

    with xla_allowed():
        yield
