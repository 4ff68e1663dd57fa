"""Arguments TF 2.21 takes or refuses, taken or refused the same way (issue 28 items 5 and 6).

Each comment gives what TensorFlow 2.21 did with the same call.
"""

import numpy as np
import pytest
from data_support import elements

from phalanx.data import Dataset, Options
from phalanx.errors import DatasetArgumentError


def test_prefetch_0_and_none_yield_as_tf():
    # TF 2.21: range(3).prefetch(0) and .prefetch(None) -> [0, 1, 2]
    assert elements(Dataset.range(3).prefetch(0)) == [0, 1, 2]
    assert elements(Dataset.range(3).prefetch(None)) == [0, 1, 2]
    with pytest.raises(DatasetArgumentError, match="buffer_size"):
        Dataset.range(3).prefetch(-2)


def test_enumerate_and_repeat_take_a_0d_integer_array_as_tf():
    # TF 2.21: range(3).enumerate(np.array(5)) -> [(5, 0), (6, 1), (7, 2)];
    # range(2).repeat(np.array(2, np.int32)) -> [0, 1, 0, 1]
    assert elements(Dataset.range(3).enumerate(np.array(5))) == [(5, 0), (6, 1), (7, 2)]
    assert elements(Dataset.range(2).repeat(np.array(2, np.int32))) == [0, 1, 0, 1]
    with pytest.raises(TypeError, match="0-d integer array"):
        Dataset.range(2).repeat(np.array([2]))


def test_from_tensor_slices_of_nothing_is_refused_as_tf():
    # TF 2.21: from_tensor_slices(()) ValueError "Invalid `element`. `element` should not be
    # empty."; from_tensors(()) InvalidArgumentError "Length for attr 'Toutput_types' of 0 must
    # be at least minimum 1"
    with pytest.raises(DatasetArgumentError, match="from_tensor_slices: .* no components"):
        Dataset.from_tensor_slices(())
    with pytest.raises(DatasetArgumentError, match="from_tensors: .* no components"):
        Dataset.from_tensors({})


def test_options_deterministic_must_be_a_bool_as_tf():
    # TF 2.21: TypeError 'Property "deterministic" must be of type <class 'bool'>, got: ...'
    options = Options()
    with pytest.raises(TypeError, match='"deterministic" must be of type bool'):
        options.deterministic = "not a bool"
    options.deterministic = False
    assert Dataset.range(2).with_options(options).options().deterministic is False
    options.deterministic = None
    assert options == Options()
