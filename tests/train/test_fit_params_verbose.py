"""``params['verbose']`` as Keras 3 (and TF 2.21's tf_keras) give it.

Without ``verbose``, Keras 3 and tf_keras both give callbacks (and the
``History`` returned by ``fit``) ``params['verbose'] == 'auto'``, in ``fit``
(its validation run too), ``evaluate`` and ``predict``; an explicit value is
given as passed.
"""

import numpy as np
import pytest

import phalanx
from phalanx import callbacks


class _Params(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = {}

    def on_train_begin(self, logs=None):
        self.seen["train"] = self.params["verbose"]

    def on_test_begin(self, logs=None):
        self.seen.setdefault("test", self.params["verbose"])

    def on_predict_begin(self, logs=None):
        self.seen["predict"] = self.params["verbose"]


def _model():
    model = phalanx.Sequential([phalanx.Input((2,)), phalanx.layers.Dense(1)])
    model.compile("sgd", "mse")
    return model


X, Y = np.zeros((4, 2), np.float32), np.zeros((4, 1), np.float32)


def test_verbose_not_passed_is_auto_in_params(capsys):
    model, cb = _model(), _Params()
    history = model.fit(X, Y, validation_data=(X, Y), callbacks=[cb])
    assert history.params["verbose"] == "auto"
    model.evaluate(X, Y, callbacks=[cb])
    model.predict(X, callbacks=[cb])
    assert cb.seen == {"train": "auto", "test": "auto", "predict": "auto"}
    assert "1/1" in capsys.readouterr().out  # 'auto' still draws the bar, as 1


@pytest.mark.parametrize("verbose", [0, 1, 2])
def test_explicit_verbose_is_given_as_passed(verbose):
    history = _model().fit(X, Y, verbose=verbose)
    assert history.params["verbose"] == verbose
