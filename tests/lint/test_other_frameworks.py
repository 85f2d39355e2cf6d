"""A file of another framework (TensorFlow, JAX, Paddle...) that imports nothing of PyTorch's is not
linted: its tensors are not torch's, so no claim about autograd holds there and a torch fix
(`masked_fill`, `F.normalize`) would break it. A file that imports torch too is linted as before."""

from __future__ import annotations

import pytest

from traindoctor.config import Config
from traindoctor.lint import lint_source

STRICT = Config(select=("strict",))

# GraphSAINT's tensorflow_version/inits.py: TRN406 read the Glorot range's `shape[0] + shape[1]` as a
# sum over rows of data (a torch claim, with a NaN gradient, on a TensorFlow file)
_GLOROT = '''
import numpy as np
{imports}


def glorot(shape, name=None):
    init_range = np.sqrt(6.0/(shape[0]+shape[1]))
    return init_range


def normalised(rows):
    return rows / rows.norm(dim=1, keepdim=True)
'''


@pytest.mark.parametrize("imports", ["import tensorflow as tf", "import jax.numpy as jnp",
                                     "from tensorflow.keras import layers", "import paddle"])
def test_a_file_of_another_framework_is_not_linted(imports):
    source = _GLOROT.format(imports=imports) + "# torch\n"  # the word alone lets the lint look
    assert lint_source(source, "inits.py", STRICT).findings == ()


def test_a_file_that_imports_torch_beside_another_framework_is_linted():
    source = _GLOROT.format(imports="import tensorflow as tf\nimport torch")
    codes = [f.code for f in lint_source(source, "inits.py", STRICT).findings]
    assert "TRN406" in codes  # `rows / rows.norm(dim=1)`: an all-zero row of the data it is given


def test_a_file_with_no_framework_import_is_still_linted():
    source = _GLOROT.format(imports="") + "# torch\n"  # a NumPy helper of a torch project
    codes = [f.code for f in lint_source(source, "inits.py", STRICT).findings]
    assert "TRN406" in codes
