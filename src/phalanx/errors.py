"""Every error class phalanx raises, in one place.

Each message says what was expected, what was received and what to do. The
classes subclass the builtin that a caller would catch without knowing phalanx
(``ValueError``, ``TypeError``, ``RuntimeError``), so ``except ValueError``
keeps working.
"""

from __future__ import annotations

import difflib


class PhalanxError(Exception):
    """Base class of every phalanx error."""


class DeviceNotFoundError(PhalanxError, ValueError):
    """A device specification matches no device of this process."""


class StatefulAPIError(PhalanxError, AttributeError):
    """A Keras method that keeps state in the object (``metric.update_state``,
    ``optimizer.apply_gradients``), which phalanx's pure metrics and optimizers do not have."""


class StepOverrideError(PhalanxError, TypeError):
    """An overridden ``train_step``/``test_step``/``predict_step`` not in Keras 3's JAX form
    (``step(self, state, data) -> (logs, state)``), or returning another state."""


class TPUNotFoundError(DeviceNotFoundError, RuntimeError):
    """``TPUStrategy`` found no TPU and was not asked to simulate its cores on CPU devices."""


class DistributeArgumentError(PhalanxError, ValueError, TypeError):
    """A strategy or ``phalanx.distribute`` function got an argument of a type or value it
    cannot use (``compute_average_loss``'s ``global_batch_size``, ``TPUStrategy``'s
    ``compute_dtype``, a strategy's device list)."""


class BatchNotDivisibleError(PhalanxError, ValueError):
    """A global batch does not divide evenly over the replicas."""

    @classmethod
    def of(cls, batch: int, replicas: int, *, what: str = "global batch", hint: str = ""):
        """The error for a ``batch`` that does not split over ``replicas``, with the nearest sizes.

        Examples:
          >>> print(BatchNotDivisibleError.of(10, 8))
          A global batch of 10 does not split evenly over the 8 replicas. The nearest valid sizes are 8 and 16 (a per-replica batch times 8).
        """
        lower = max(replicas, batch // replicas * replicas)
        upper = (batch // replicas + 1) * replicas
        message = (
            f"A {what} of {batch} does not split evenly over the {replicas} replicas. The "
            f"nearest valid sizes are {lower} and {upper} (a per-replica batch times {replicas})."
        )
        return cls(f"{message} {hint}".strip())


class ScopeError(PhalanxError, RuntimeError):
    """A strategy scope was entered where it cannot be (another strategy's scope, or inside run)."""


class ReplicaContextError(PhalanxError, RuntimeError):
    """A replica-only call was made in cross-replica context, or the reverse."""


class RunCompilationError(PhalanxError, TypeError):
    """The function given to ``strategy.run`` could not be traced and compiled."""


class DataUnavailableError(PhalanxError, ConnectionError):
    """A data set is neither on disk nor downloadable (offline); the message says where to put it."""


class DistributedValueError(PhalanxError, ValueError):
    """A value given to ``reduce``/``gather`` is not of the kind or shape expected."""


class RunArgumentError(PhalanxError, TypeError):
    """``strategy.run`` got an ``fn``, ``args`` or ``kwargs`` it cannot use (not callable, not arrays)."""


class DistributedInputError(DistributedValueError, TypeError):
    """Distributed input got a dataset function, dataset or option of the wrong kind."""


class DataLossError(PhalanxError, OSError):
    """A record file is damaged (TensorFlow's ``DataLossError``): the message names the file and offset."""


class CorruptRecordError(DataLossError):
    """A TFRecord's length or data does not match its CRC-32C checksum."""


class TruncatedRecordError(DataLossError):
    """A record file ends in the middle of a record (every complete record before it was read)."""


class ExampleParseError(PhalanxError, ValueError):
    """A serialized ``tf.train.Example`` is malformed or does not match the feature specs."""


class ExampleInputError(PhalanxError, TypeError):
    """``parse_example``/``parse_single_example`` got something other than serialized Examples."""


class CsvParseError(PhalanxError, ValueError):
    """A CSV record does not parse: its number of fields, a number, a required field or quotes."""


class LayerShapeError(PhalanxError, ValueError):
    """A layer received an input whose shape or dtype it cannot take; the message names the layer."""


class ModelStructureError(PhalanxError, ValueError):
    """A functional model's graph or inputs do not fit (a disconnected graph, inputs of another structure)."""


class LayerArgumentError(PhalanxError, ValueError, TypeError):
    """A layer's constructor got an argument of the wrong type or value (``Dense("128")``)."""


class ActivationError(LayerArgumentError):
    """An activation identifier phalanx cannot use: neither a name, a config dict nor a function
    (``activations.get(3)``), a config dict that names no function, ``serialize`` of
    something that is not a named function; or an input an activation cannot take
    (``glu`` over an axis of odd size). A `LayerArgumentError`: a layer given such an
    ``activation=`` raises it."""


class KerasFileError(PhalanxError, ValueError):
    """A Keras file phalanx cannot read or write: not one, a layer or argument phalanx lacks, code."""


class ExportError(PhalanxError, ValueError):
    """``model.export`` cannot write what was asked: a TensorFlow format, or a model not built."""


class NotBuiltError(PhalanxError, RuntimeError):
    """A network or layer was used before its weights exist (call ``build(input_shape)`` first)."""


class MissingTargetsError(PhalanxError, ValueError):
    """``fit``/``evaluate`` got inputs without targets ``y``, but the loss or metrics need them."""

    @classmethod
    def of(cls, where: str, needs: str, *, batch: int | None = None):
        """The error for ``where`` (e.g. ``"fit's x"``) lacking targets that ``needs`` compares.

        Examples:
          >>> print(MissingTargetsError.of("fit's x", "the loss 'mse'"))
          fit's x has no targets (y), but the loss 'mse' compares predictions with targets. Pass them (fit(x, y), validation_data=(x_val, y_val)), or make the dataset yield (x, y) batches. A loss that ignores its targets still needs some: pass y=np.zeros(len(x)).
        """
        at = "" if batch is None else f" (batch {batch} has none, earlier ones had)"
        return cls(
            f"{where} has no targets (y){at}, but {needs} compares predictions with targets. "
            "Pass them (fit(x, y), validation_data=(x_val, y_val)), or make the dataset yield "
            "(x, y) batches. A loss that "
            "ignores its targets still needs some: pass y=np.zeros(len(x))."
        )


class LabelOutOfRangeError(PhalanxError, ValueError):
    """A sparse label is not a class index in ``[0, classes)`` (TensorFlow raises too)."""

    @classmethod
    def of(cls, value: float, classes: int, batch: int, count: int, loss: str):
        """The error for ``count`` bad labels, the first seen ``value`` at ``batch``.

        A label that is not a whole number (``0.5``, NaN) is no class index either.

        Examples:
          >>> print(LabelOutOfRangeError.of(-1, 4, 3, 1, "sparse_categorical_crossentropy"))
          Received a label value of -1 which is outside the valid range of [0, 4) (sparse_categorical_crossentropy), at batch 3 (1 label out of range from there). Labels are class indices 0..3: remap them (e.g. y - 1 for labels from 1), or give the last layer as many units as classes.
          >>> print(LabelOutOfRangeError.of(0.5, 4, 0, 2, "sparse_categorical_crossentropy"))
          Received a label value of 0.5, which is not a class index (a whole number in [0, 4)) (sparse_categorical_crossentropy), at batch 0 (2 such labels from there). Sparse losses take integer labels; whole-number floats (1.0) are accepted. For soft or one-hot targets use categorical_crossentropy; else round or cast them (y.astype(np.int32)) on purpose.
        """
        labels = "label" if count == 1 else "labels"
        if not float(value).is_integer():
            return cls(
                f"Received a label value of {value:g}, which is not a class index (a whole "
                f"number in [0, {classes})) ({loss}), at batch {batch} ({count} such {labels} "
                "from there). Sparse losses take integer labels; whole-number "
                "floats (1.0) are accepted. For soft or one-hot targets use "
                "categorical_crossentropy; else round or cast them (y.astype(np.int32)) on "
                "purpose."
            )
        value = int(value)
        return cls(
            f"Received a label value of {value} which is outside the valid range of "
            f"[0, {classes}) ({loss}), at batch {batch} ({count} {labels} out of range from "
            f"there). Labels are class indices 0..{classes - 1}: remap them (e.g. y - 1 for "
            "labels from 1), or give the last layer as many units as classes."
        )


class RegularizerError(PhalanxError, ValueError):
    """A regularizer name, config or factor that phalanx cannot use (unknown, or a negative factor)."""


class ConstraintError(PhalanxError, ValueError):
    """A weight constraint name, config or argument that phalanx cannot use (Keras's ``ValueError``)."""


class LearningRateError(PhalanxError, TypeError):
    """An optimizer state's learning rate cannot be read or set (no injected rate, or a schedule)."""


class LearningRateValueError(PhalanxError, ValueError):
    """A learning rate, or a schedule's rate at a step the run takes, is NaN or infinite."""

    @classmethod
    def of(cls, schedule: str, step: int, value: float, first: int, end: int):
        """The error for ``schedule`` giving ``value`` at ``step`` of the steps ``[first, end)``.

        Examples:
          >>> print(LearningRateValueError.of("warmup", 3, float("nan"), 0, 100))
          The learning-rate schedule warmup gave nan at step 3 (optimizer.iterations; this fit takes steps 0..99). Every weight would turn NaN from that step on. Fix the schedule there (a division by zero, a log of 0, an overflow) before training.
        """
        return cls(
            f"The learning-rate schedule {schedule} gave {value} at step {step} "
            f"(optimizer.iterations; this fit takes steps {first}..{end - 1}). Every weight "
            "would turn NaN from that step on. Fix the schedule there (a division by zero, a "
            "log of 0, an overflow) before training."
        )


class FitInputError(PhalanxError, ValueError, TypeError):
    """``fit``/``evaluate``/``predict`` got x, y or sample_weight no adapter can take.

    A string, a Python list of rows, arrays of strings or objects, or arrays with
    different numbers of examples; the message names the argument and what to pass.
    """


# --- phalanx.data ---------------------------------------------------------


class DatasetArgumentError(PhalanxError, ValueError):
    """A ``Dataset`` transformation got an argument it cannot use (a size <= 0, a bad index)."""


class DatasetTypeError(DatasetArgumentError, TypeError):
    """A ``Dataset`` method got an argument of the wrong type (a ``TypeError`` too)."""


class ComponentLengthError(PhalanxError, ValueError):
    """``from_tensor_slices`` got components whose first dimensions differ."""


class BatchShapeError(PhalanxError, ValueError):
    """``batch`` met elements of different shapes (``padded_batch`` pads them)."""


class PaddingError(PhalanxError, ValueError):
    """``padded_batch`` cannot pad an element to the requested shape."""


class StructureMismatchError(PhalanxError, TypeError):
    """Elements of one dataset have different nestings (a ``map`` output changed, ``zip`` or ``concatenate`` of unlike datasets)."""


class DatasetFunctionError(PhalanxError, ValueError):
    """A function given to a ``Dataset`` transformation raised ``StopIteration`` (it would
    otherwise end the dataset silently) or returned an element without arrays (only ``None``
    components); tf.data raises ``InvalidArgumentError`` for both."""


class AlreadyExistsError(PhalanxError, FileExistsError):
    """A second iterator started writing a file cache that another is writing (tf.data's
    ``AlreadyExistsError``: the cache's lock file exists)."""


class GeneratorSignatureError(PhalanxError, TypeError):
    """An element yielded by ``from_generator``'s generator does not match ``output_signature``."""


class NotCheckpointableError(PhalanxError, RuntimeError):
    """``get_state`` was asked of an iterator whose position cannot be saved."""


class IteratorStateError(PhalanxError, ValueError):
    """``set_state`` got a state saved from a different pipeline, or an unknown format."""


class WeightsFileError(PhalanxError, OSError, ValueError):
    """A weights file cannot be written there, or is not one that matches the model."""


class WeightsFileExistsError(WeightsFileError, FileExistsError):
    """``save_weights``/``save`` with ``overwrite=False`` found a file at the path."""


class FileSystemNotInstalledError(PhalanxError, ImportError):
    """A path's protocol (``gs://``, ``s3://`` ...) needs an fsspec package that is not installed."""


class UnknownProtocolError(PhalanxError, ValueError):
    """A path names a protocol (``xyz://``) that no fsspec file system serves."""


class AutoShardError(PhalanxError, ValueError):
    """An auto-shard policy cannot be applied to this pipeline (for example FILE without files)."""


class ClusterConfigError(PhalanxError, ValueError):
    """A cluster description (TF_CONFIG, SLURM, Kubernetes, TPU or PHALANX_* variables) is invalid."""


class UnsupportedClusterError(ClusterConfigError):
    """A cluster that this runtime cannot join (evaluator/ps tasks, a remote TPU node)."""


class InitializationError(PhalanxError, RuntimeError):
    """``phalanx.cluster.initialize()`` could not bring the processes together."""


class CoordinatorUnreachableError(InitializationError):
    """Nobody listens at the coordinator address (process 0 is not up, or the address is wrong)."""


class ProcessesMissingError(InitializationError):
    """Some processes never arrived at the coordinator before the deadline."""


class ClusterMismatchError(InitializationError):
    """Processes disagree about the cluster, or it was already initialized differently."""


class BackendAlreadyStartedError(InitializationError):
    """``initialize()`` came after JAX started its backends in this process."""


class CheckpointError(PhalanxError, ValueError):
    """A checkpoint cannot be saved or restored (bad arguments, no checkpoint there)."""


class CheckpointNotFoundError(CheckpointError, FileNotFoundError):
    """No checkpoint at the path given (or none committed in the directory)."""


class CheckpointMismatchError(CheckpointError):
    """A checkpoint's arrays (names, shapes, dtypes) do not match the objects restored into."""


class CheckpointWriteError(CheckpointError, OSError):
    """A checkpoint could not be written (disk full, a folder not writable); what was at its
    path is unchanged. An ``OSError`` too, as the failure under it."""


# --- compile ----------------------------------------------------------------


class CompileArgumentError(PhalanxError, ValueError, TypeError):
    """``compile`` got an argument it cannot use (``steps_per_execution=0``, ``metrics="mae"``)."""


class NotCompiledError(PhalanxError, ValueError, RuntimeError):
    """``fit``/``evaluate``/``train_on_batch`` came before ``compile`` (Keras 3 raises ValueError;
    ``predict`` is allowed, as in Keras)."""


class CallbackArgumentError(PhalanxError, ValueError, TypeError):
    """A callback's constructor, or ``fit``'s ``callbacks=``, got an argument it cannot use
    (``ModelCheckpoint(3)``, ``ReduceLROnPlateau(factor=1.5)``, ``callbacks=[1]``)."""


class ModelArgumentError(ModelStructureError, TypeError):
    """A ``Sequential`` got something other than layers (``Sequential(3)``, ``add("x")``)."""


class UnknownNameError(PhalanxError, ValueError):
    """A name that phalanx does not know: an optimizer, loss, metric (``compile(loss="msee")``),
    activation or initializer (``Dense(8, activation="relux")``)."""

    @classmethod
    def of(cls, kind: str, given: str, known, *, hint: str):
        """The error for the ``kind`` name ``given``, with the closest of ``known`` and ``hint``.

        Examples:
          >>> print(UnknownNameError.of("loss", "msee", ["mae", "mse"], hint="Or a function."))
          Unknown loss 'msee'. Did you mean 'mse'? The known loss names are ['mae', 'mse']. Or a function.
        """
        by_lower: dict[str, str] = {}
        for name in known:  # one spelling per name ('huber' and 'Huber' are one)
            by_lower.setdefault(name.lower(), name)
        close = difflib.get_close_matches(given.lower(), list(by_lower), n=1, cutoff=0.75)
        guess = f" Did you mean {by_lower[close[0]]!r}?" if close else ""
        names = sorted(by_lower.values(), key=str.lower)
        return cls(f"Unknown {kind} {given!r}.{guess} The known {kind} names are {names}. {hint}")


class LayoutError(PhalanxError, ValueError):
    """A model-parallel layout does not fit: a ``DeviceMesh``, a ``LayoutMap`` entry, or a
    variable's spec (unknown mesh axis, one entry per axis, axis sizes that divide)."""


class OptimizerArgumentError(PhalanxError, ValueError, TypeError):
    """An optimizer's constructor got an argument it cannot use (``SGD(momentum=2)``)."""


class LossArgumentError(PhalanxError, ValueError, TypeError):
    """A loss got an argument, or targets and predictions, it cannot use (``reduction="x"``,
    one-hot targets of 3 classes for 4 outputs)."""


class RandomSeedError(PhalanxError, ValueError, TypeError):
    """``phalanx.utils.set_random_seed`` got something other than an int in ``[0, 2**32)``
    (Keras 3 refuses a non-int; numpy refuses one outside that range)."""


class UtilsArgumentError(PhalanxError, ValueError, TypeError):
    """A ``phalanx.utils`` helper (``pad_sequences``, ``timeseries_dataset_from_array``,
    ``split_dataset``, ``normalize``, ...) got an argument Keras also refuses (with a
    ``ValueError``, or a ``TypeError`` for a wrong type); the message is Keras's, with what to do."""


class DownloadError(PhalanxError, OSError):
    """``phalanx.utils.get_file`` could not fetch its ``origin``: an HTTP error, an
    unreachable host, a timeout or a body shorter than announced. The message names the
    URL, as Keras's ``URL fetch failure on ...``; nothing is left in the cache."""


class FileHashError(PhalanxError, ValueError):
    """``phalanx.utils.get_file`` downloaded a file whose hash is not ``file_hash``
    (Keras's ``ValueError`` "Incomplete or corrupted file detected"); the file is not kept."""


class BackendSettingError(PhalanxError, ValueError):
    """A ``phalanx.backend`` setting (``set_floatx``, ``set_epsilon``,
    ``set_image_data_format``) that is unknown, or that phalanx's layers do not honour."""


__all__ = sorted(
    name
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, Exception) and not name.startswith("_")
)
