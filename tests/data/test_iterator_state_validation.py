"""Iterator states come from outside (checkpoint files): a tampered or foreign one is refused
with an ``IteratorStateError`` that says what is wrong, never resumed into elements that were
not in the dataset, nor past its end."""

import numpy as np
import pytest

from phalanx.data import Dataset
from phalanx.errors import IteratorStateError


def _state_after(ds, k):
    it = iter(ds)
    for _ in range(k):
        next(it)
    return it.get_state()


def test_a_negative_position_is_refused():
    state = _state_after(Dataset.range(10).batch(3), 1)
    state["node"]["child"]["i"] = -7
    with pytest.raises(IteratorStateError, match=r"'i' \(position\) is -7, outside \[0, 10\]"):
        iter(Dataset.range(10).batch(3)).set_state(state)


def test_a_state_saved_on_more_data_says_so():
    state = _state_after(Dataset.range(10).batch(3), 3)
    with pytest.raises(IteratorStateError, match="saved on data of 10 elements.*has 4"):
        iter(Dataset.range(4).batch(3)).set_state(state)


def test_a_state_saved_on_other_data_of_a_shuffle_says_so():
    state = _state_after(Dataset.range(10).shuffle(4, seed=1), 2)
    with pytest.raises(IteratorStateError, match="saved on data of 10 elements.*has 6"):
        iter(Dataset.range(6).shuffle(4, seed=1)).set_state(state)


def test_a_generator_state_past_its_end_says_so():
    def gen(n):
        return lambda: iter(np.arange(n))

    spec = Dataset.from_generator(gen(8), output_types=np.int64, output_shapes=())
    state = _state_after(spec, 6)
    short = Dataset.from_generator(gen(3), output_types=np.int64, output_shapes=())
    with pytest.raises(IteratorStateError, match="saved after 6 elements.*only 3"):
        iter(short).set_state(state)


@pytest.mark.parametrize(
    ("edit", "match"),
    [
        (lambda s: s.update(iteration=-1), r"'iteration' .* is -1"),
        (lambda s: s.update(iteration="0"), r"'iteration' .* must be an int, got '0'"),
        (lambda s: s.pop("node"), r"no 'node'"),
        (lambda s: s.update(node="x"), r"no 'n' .*got x"),
        (lambda s: s["node"].update(n=1.5), r"'n' .* must be an int, got 1.5"),
        (lambda s: s["node"].update(child=None), r"no 'i'"),
        (lambda s: s["node"]["child"].update(i=True), r"must be an int, got True"),
        (lambda s: s.update(pipeline="Batch(Other)"), r"different pipeline"),
        (lambda s: s.update(format=2), r"format"),
    ],
)
def test_damaged_states_are_refused(edit, match):
    state = _state_after(Dataset.range(10).batch(3), 1)
    edit(state)
    with pytest.raises(IteratorStateError, match=match):
        iter(Dataset.range(10).batch(3)).set_state(state)


def test_valid_states_still_resume_exactly():
    for ds in (
        Dataset.range(10).batch(3),
        Dataset.range(10).shuffle(4, seed=1).batch(2),
        Dataset.from_tensor_slices(np.arange(12)).map(lambda x: x + 1).batch(5),
    ):
        it = iter(ds)
        next(it)
        state = it.get_state()
        rest = [np.asarray(x).tolist() for x in it]
        again = iter(ds)
        again.set_state(state)
        assert [np.asarray(x).tolist() for x in again] == rest
