"""Callbacks for ``fit``, ``evaluate`` and ``predict``, with Keras's names and hooks.

``Callback`` is the base class; ``CallbackList`` calls a list of them as one.
The callbacks are Keras 3's: ``History``, ``ProgbarLogger``, ``TensorBoard``,
``EarlyStopping``, ``LearningRateScheduler``, ``ReduceLROnPlateau``,
``TerminateOnNaN``, ``CSVLogger``, ``ModelCheckpoint``, ``BackupAndRestore`` and
``LambdaCallback``.

The protocol a training loop follows (``Model.fit`` does):

- Build ``CallbackList(callbacks, add_history=True, add_progbar=verbose != 0,
  model=model, epochs=E, steps=S, verbose=V)``; ``steps`` is the number of
  steps per epoch, or ``None`` when unknown (the first epoch then tells the
  progress bar). ``evaluate`` and ``predict`` build their own list, with
  ``epochs=1`` and their own ``steps``.
- ``fit`` calls ``on_train_begin``; for each epoch ``e`` (0-based, from
  ``initial_epoch``) ``on_epoch_begin(e)``; for each execution of
  ``steps_per_execution=N`` fused steps, ``on_train_batch_begin(first)``
  and ``on_train_batch_end(last, logs)`` once, where ``first`` and ``last``
  are the 0-based indices within the epoch of the execution's first and last
  step, and ``logs`` holds Python floats: the running epoch averages of
  ``loss`` and the metrics after step ``last``. The progress bar moves to
  ``last + 1``; ``TensorBoard(update_freq=K)`` and
  ``ModelCheckpoint(save_freq=K)`` fire when the total of steps reaches or
  passes a multiple of ``K`` in an execution.
- After each execution ``fit`` reads ``model.stop_training`` and ends the
  epoch early when it is set (``TerminateOnNaN``); after each epoch it ends
  training when it is set (``EarlyStopping``).
- Validation inside ``fit`` calls ``on_test_begin``, the test-batch hooks
  and ``on_test_end(val_logs)`` (the progress bar stays silent), then
  ``on_epoch_end(e, logs)`` with one dict holding the training values and
  the ``val_``-prefixed validation values. Every callback gets that same
  dict: callbacks add to it (``learning_rate``) for those after them.
- ``on_train_end`` comes last, also after an early stop: ``EarlyStopping``
  restores weights and ``TensorBoard`` closes its event files there.

What callbacks use of the model: ``stop_training`` (settable),
``optimizer.learning_rate`` (a float property; a schedule's current rate can
be read, but setting it raises TypeError, as in Keras), ``metrics`` (a
metric's ``direction``, ``"up"`` or ``"down"``, settles ``mode="auto"``),
``get_weights()``, ``set_weights(list)``, ``save_weights(filepath)`` and
``history`` (set by ``History``). The tests in ``tests/callbacks`` drive the
real ``fit``, ``evaluate`` and ``predict``.

Printing (progress bar, ``verbose`` messages) and writing files
(TensorBoard, CSV) happen on process 0 only (``jax.process_index() == 0``);
calls into the model (``get_weights``, ``save_weights``) happen on every
process, since gathering sharded weights may need all of them.
"""

from ._backup_and_restore import BackupAndRestore as BackupAndRestore
from ._callback import Callback as Callback
from ._callback_list import CallbackList as CallbackList
from ._csv_logger import CSVLogger as CSVLogger
from ._early_stopping import EarlyStopping as EarlyStopping
from ._history import History as History
from ._lambda_callback import LambdaCallback as LambdaCallback
from ._learning_rate_scheduler import LearningRateScheduler as LearningRateScheduler
from ._model_checkpoint import ModelCheckpoint as ModelCheckpoint
from ._progbar_logger import ProgbarLogger as ProgbarLogger
from ._reduce_lr_on_plateau import ReduceLROnPlateau as ReduceLROnPlateau
from ._tensorboard import TensorBoard as TensorBoard
from ._terminate_on_nan import TerminateOnNaN as TerminateOnNaN

# isort: split
# For phalanx's own packages (not public API, absent from __all__): the logs' clean-up
# that fit applies to an overridden step's logs.
from ._callback_list import pythonify_logs as pythonify_logs

__all__ = [
    "BackupAndRestore",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "TensorBoard",
    "TerminateOnNaN",
]
