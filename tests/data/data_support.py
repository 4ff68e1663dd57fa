"""Helpers of the data tests (a plain module: a conftest.py of this name would shadow others)."""

from __future__ import annotations

import json

import numpy as np

from phalanx.data import _structure as st


def as_list(x):
    """An element as nested Python lists/tuples/dicts, for == comparisons."""
    if isinstance(x, tuple):
        return tuple(as_list(c) for c in x)
    if isinstance(x, dict):
        return {k: as_list(v) for k, v in x.items()}
    return np.asarray(x).tolist()


def elements(ds_or_iter, limit=None):
    """The elements of a dataset or iterator as Python values (at most ``limit``)."""
    out = []
    for e in ds_or_iter:
        out.append(as_list(e))
        if limit is not None and len(out) >= limit:
            break
    return out


def same_elements(a, b):
    """Exact equality of two elements including dtypes."""
    fa, fb = st.flatten(a), st.flatten(b)
    return len(fa) == len(fb) and all(
        np.asarray(x).dtype == np.asarray(y).dtype and np.array_equal(x, y)
        for x, y in zip(fa, fb, strict=True)
    )


def assert_equal_output_after_checkpoint(make_dataset, steps=None):
    """Restore at every step into a fresh iterator of a freshly built dataset; compare the rest.

    grain's ``assert_equal_output_after_checkpoint``: for every k, the state
    after k elements (through JSON) restores an iterator that yields exactly
    the elements k, k+1, ... of the uninterrupted run.
    """
    it = iter(make_dataset())
    states, full = [], []
    while steps is None or len(full) < steps:
        states.append(json.loads(json.dumps(it.get_state())))
        try:
            full.append(next(it))
        except StopIteration:
            break
    else:
        states.append(json.loads(json.dumps(it.get_state())))
    finite = steps is None
    for k, state in enumerate(states):
        it2 = iter(make_dataset())
        it2.set_state(state)
        rest = []
        for _ in range(len(full) - k):
            rest.append(next(it2))
        if finite:
            try:
                extra = next(it2)
            except StopIteration:
                pass
            else:
                raise AssertionError(
                    f"restored at step {k}: iterator went on past the end with {extra!r}"
                )
        assert len(rest) == len(full) - k
        for j, (x, y) in enumerate(zip(rest, full[k:], strict=True)):
            assert same_elements(x, y), (
                f"restored at step {k}: element {k + j} is {x!r}, expected {y!r}"
            )
    return full
