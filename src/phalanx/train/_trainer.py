"""``Trainer``: Keras's ``compile``/``fit``/``evaluate``/``predict`` for a model (``keras/src/trainers``).

``Model`` (`phalanx.models`) inherits it, as Keras 3's ``Model`` inherits its backend's
``Trainer``. ``fit`` reads like a table of contents: adapt the input (``data_adapters``),
build the state (``TrainState``, replicated on the strategy's mesh), then for each epoch run
compiled executions of ``steps_per_execution`` fused steps (``_programs``) and tell the
callbacks. Executions run through ``_loop.pipelined``: at most two in flight, callbacks told
each execution's logs in order. Every loop of executions (train, eval, predict) beats the
watchdog (``phalanx.cluster.watchdog``) once per execution with its first step and phase.

What the trainer asks of the model it is mixed into (the hooks ``Model`` defines):
``name``, ``built``, ``build(input_shape)``, ``_module`` (the flax.nnx module),
``_strategy`` (the strategy whose mesh holds the weights) and ``_build_from_example(batch)``.
"""

from __future__ import annotations

import functools
import itertools
import logging
import math
from collections.abc import Callable, Sequence
from typing import Any

import flax.nnx as nnx
import jax
import jax.numpy as jnp
import numpy as np

from .. import optimizers as _optimizers
from .. import regularizers
from .._packed import Packed
from .._random import model_seed
from ..callbacks import CallbackList, pythonify_logs
from ..checkpoint import load_state, state_items
from ..constraints import _constraints
from ..distribute import DefaultStrategy, annotate_paths, get_strategy
from ..errors import (
    CompileArgumentError,
    LabelOutOfRangeError,
    MissingTargetsError,
    NotCompiledError,
    ScopeError,
)
from ..layers import trainable_filter
from . import _first_batch, _loop, _model_parallel, _multi_output, _override, _step
from . import _position as _checkpointing
from . import _programs as _sharded
from ._compile import CompileConfig, finalize_weights, resolve_compile
from ._stateless import StatelessMethods
from .data_adapters import _adapter, _read_ahead
from .data_adapters._checks import FitInputError, check_inputs

log = logging.getLogger("phalanx")


class Trainer(StatelessMethods):
    """Keras's training API over a model's flax.nnx module; ``Model`` mixes it in.

    A model may override ``train_step``/``test_step``/``predict_step`` in Keras 3's JAX
    form (``_override``); ``fit``/``evaluate``/``predict`` then compile the override.
    """

    def __init__(self) -> None:
        self._config: CompileConfig | None = None
        self._state_tree: _step.TrainState | None = None  # the state (``_state``), or None
        self._state_leaves: list | None = None  # ... as its leaves, while the programs run
        self._state_def = None
        self._predict_only = False  # compiled by predict() for itself, not by the user
        self._losses_run = False
        self._state: _step.TrainState | None = None
        self._graphdefs: tuple | None = None
        self._programs: dict = {}
        self._overrides = False  # train_step/test_step overridden (_override), set with _state
        self._step_metrics: tuple = ()  # the metrics the state accumulates
        # Where fit stands (epoch, steps done, input state), kept with _state; a restored
        # checkpoint's arrays wait in _pending until the state exists; _resume tells the
        # next fit to start at a restored position (BackupAndRestore asks, _resume_restored).
        self._position = _checkpointing.TrainPosition()
        self._pending: tuple | None = None
        self._resume: _checkpointing.TrainPosition | None = None
        self._train_signature: tuple | None = None  # the last fit's step shapes (models/_memory)
        self.stop_training = False
        # Keras 3: a callback sets these to end evaluate/predict after the current batch.
        self.stop_evaluating = False
        self.stop_predicting = False
        self.history = None
        self.optimizer = None
        self._run_eagerly = False
        self._compile_args: dict | None = None  # compile's arguments as given (.keras files)

    # -- compile ------------------------------------------------------------

    def compile(
        self,
        optimizer: Any = "rmsprop",
        loss: Any = None,
        metrics: Sequence[Any] | None = None,
        *,
        steps_per_execution: int = 1,
        jit_compile: bool | str = "auto",
        seed: int | None = None,
        loss_weights: Any = None,
        weighted_metrics: Sequence[Any] | None = None,
        run_eagerly: bool = False,
    ) -> None:
        """Configures the model for training (Keras's ``compile``).

        Args:
          optimizer: a Keras name (``"adam"``, ``"sgd"``, ``"rmsprop"``, ``"adamw"``,
            ``"adagrad"``), a ``phalanx.optimizers`` object, or an optax
            ``GradientTransformation``.
          loss: a Keras loss name, a ``phalanx.losses`` object, or a callable
            ``(y_true, y_pred) -> per-example losses``.
          metrics: names (``"accuracy"`` is resolved from the loss, as Keras does)
            or ``phalanx.metrics`` objects. As Keras 3, they are not weighted by
            ``sample_weight`` or ``class_weight`` (padding never counts).
          steps_per_execution: the number of training steps fused into one compiled
            program (``lax.scan``); callbacks and the progress bar see each
            execution once, with every step counted.
          jit_compile: True, False or ``"auto"``, as Keras. ``False`` runs the steps
            un-jitted, as ``run_eagerly=True``.
          run_eagerly: run ``fit``/``evaluate``/``predict``'s steps without compiling
            them (``jax.disable_jit()``), as Keras's JAX backend does: ``print`` and
            ``pdb`` in a layer's ``call`` run at every step, on the values of each
            replica's piece (inside the gradient they are JAX tracers wrapping the
            values, as in Keras). Much slower: for debugging.
          seed: the seed of the dropout keys and of ``fit``'s shuffling; default 0,
            or drawn from ``phalanx.utils.set_random_seed``'s stream once it was called.
          loss_weights: with a loss per output (a list or dict), the weight of
            each output's loss in the total, as Keras; with one loss, a number
            that scales it.
          weighted_metrics: metrics weighted by ``sample_weight`` and
            ``class_weight`` (Keras 3's ``weighted_metrics``), the forms of ``metrics``.

        Raises:
          ValueError: an argument is out of range.
          ScopeError: the model belongs to another strategy than the current one.
        """
        _check_jit_compile(jit_compile)
        _check_run_eagerly(run_eagerly)
        self._run_eagerly = bool(run_eagerly) or jit_compile is False
        self._adopt_current_strategy()
        self._predict_only = False
        self._losses_run = False  # fit/evaluate since compile (Keras's metrics_names)
        self._compile_args = {  # as given, for the .keras file's compile_config
            "optimizer": optimizer,
            "loss": loss,
            "metrics": metrics,
            "loss_weights": loss_weights,
            "weighted_metrics": weighted_metrics,
            "steps_per_execution": steps_per_execution,
            "run_eagerly": bool(run_eagerly),
            "jit_compile": jit_compile is not False,
        }
        self._config = resolve_compile(
            optimizer,
            loss,
            metrics,
            steps_per_execution,
            model_seed() if seed is None else seed,
            loss_weights=loss_weights,
            weighted_metrics=weighted_metrics,
        )
        _multi_output.name_outputs(
            self._config.metrics, getattr(self._module, "output_names", None)
        )
        if steps_per_execution == 1 and getattr(self._strategy, "recommends_fused_steps", False):
            log.warning(
                "phalanx: %r runs each step as its own program; compile(..., "
                "steps_per_execution=N) with N of 50-100 keeps the TPU busy between host "
                "round trips.",
                self._strategy,
            )
        self.optimizer = self._config.optimizer_handle(self)
        from ..metrics import Mean

        self._loss_tracker = Mean(name="loss")  # Keras's: first of model.metrics
        metrics = tuple(self._config.metrics)
        self._compile_metrics = (
            _override.CompileMetrics(metrics, self._config.weighted) if metrics else None
        )
        self._programs = {}
        if self._state is not None:  # recompiling keeps the weights, resets the optimizer
            self._sync_module()
            self._state = None

    def _adopt_current_strategy(self) -> None:
        current = get_strategy()
        if current is self._strategy:
            return
        if isinstance(current, DefaultStrategy):
            return  # compiled outside any scope: keep the model's own strategy
        if isinstance(self._strategy, DefaultStrategy):
            log.info(
                "phalanx: moving model %r onto %r (created outside its scope).", self.name, current
            )
            self._sync_module()
            self._strategy = current
            self._state = None
            self._programs = {}
            return
        raise ScopeError(
            f"Model {self.name!r} was created under {self._strategy!r} but compiled under "
            f"{current!r}: its weights live on the first strategy's devices. Create and "
            "compile the model inside the same strategy.scope()."
        )

    def _check_current_strategy(self, what: str) -> None:
        """Raises ``ScopeError`` when ``what`` runs inside another strategy's scope.

        TF raises ``RuntimeError: Mixing different tf.distribute.Strategy objects``
        there; inside the model's own scope, or outside any scope, the model runs.
        """
        current = get_strategy()
        if current is self._strategy:
            return
        if isinstance(current, DefaultStrategy):
            return
        same_repr = (
            " (another object with the same devices)"
            if repr(current) == repr(self._strategy)
            else ""
        )
        raise ScopeError(
            f"{what}() of model {self.name!r} was called inside the scope of {current!r}"
            f"{same_repr}, but the model belongs to {self._strategy!r}, where it was created "
            "or compiled: its weights live on that strategy's devices (TF: 'Mixing different "
            f"tf.distribute.Strategy objects'). Call {what}() inside the model's own "
            "strategy.scope() or outside any scope, or create and compile the model inside "
            "this strategy's scope."
        )

    @property
    def run_eagerly(self) -> bool:
        """Whether the steps run un-jitted (``compile(run_eagerly=True)`` or ``jit_compile=False``);
        settable, as Keras's, and taking effect from the next execution."""
        return self._run_eagerly

    @run_eagerly.setter
    def run_eagerly(self, value: bool) -> None:
        _check_run_eagerly(value)
        self._run_eagerly = bool(value)

    @property
    def steps_per_execution(self) -> int:
        """The number of steps fused into one compiled program."""
        return self._config.steps_per_execution if self._config else 1

    @property
    def metrics_names(self) -> list[str]:
        """Keras 3's ``model.metrics_names``: ``[]`` before ``compile``, then ``['loss']``,
        and ``'compile_metrics'`` (the compiled metrics' tracker, one name for all) when
        ``compile`` was given metrics. Keras 3 no longer lists each metric here: read
        ``model.evaluate(..., return_dict=True)`` for the names with their values."""
        if self._config is None or self._predict_only:
            return []
        from ..train._multi_output import OutputLoss

        output_losses = [m.name for m in self._config.metrics if isinstance(m, OutputLoss)]
        names = ["loss"]
        if len(output_losses) < len(self._config.metrics):
            names.append("compile_metrics")
        # Keras lists each output's loss once fit/evaluate computed it (not after predict).
        return names + (output_losses if self._losses_run else [])

    @property
    def metrics(self) -> list:
        """Keras 3's ``model.metrics``: once compiled, the loss tracker (a ``Mean`` named
        ``"loss"``), then, when ``compile`` was given metrics, one ``compile_metrics``
        tracker of them all (its ``metrics`` are the objects, in ``compile``'s order).

        An overridden ``train_step``/``test_step`` updates these (a subclass may
        override this property with its own trackers, as keras-io's guide does);
        ``fit`` resets them at each epoch. Callbacks read them: a metric whose
        ``direction`` is ``"up"`` or ``"down"`` settles ``mode="auto"`` of
        ``EarlyStopping``, ``ReduceLROnPlateau`` and ``ModelCheckpoint`` for its name.
        """
        if self._config is None:
            return []
        return [m for m in (self._loss_tracker, self._compile_metrics) if m is not None]

    def _require_compiled(self, what: str, *, by_user: bool = False) -> CompileConfig:
        # by_user: fit/evaluate need the user's compile, not the one predict() made itself.
        if by_user or what == "predict":
            _override.check_overrides(self)
        self._losses_run = self._losses_run or (by_user and self._config is not None)
        if self._config is None or (by_user and self._predict_only):
            raise NotCompiledError(
                f"You must call compile() before {what}(): e.g. "
                "model.compile(optimizer='adam', loss='sparse_categorical_crossentropy')."
            )
        custom = _override.overridden(self, "train_step") is not None
        module = getattr(self, "_module", None)
        if (
            by_user
            and what in ("fit", "train_on_batch")
            and self._config.loss is None
            and not custom
            # layers that may add losses (add_loss, regularizers): the loss is theirs, as
            # Keras; the first batch tells whether they add any (_first_batch)
            and not (module is not None and regularizers.has_regularizers(module))
        ):
            raise NotCompiledError(_first_batch.no_loss_message(what))
        return self._config

    # -- state --------------------------------------------------------------

    @property
    def _state(self) -> _step.TrainState | None:
        """The training state (``TrainState``, placed); None before ``fit`` builds it.

        One state, held as a tree or, between the executions of a loop, as the
        leaves the programs returned (``_run_program``): each form is made from
        the other when asked for, never edited apart.
        """
        if self._state_tree is None and self._state_leaves is not None:
            self._state_tree = jax.tree.unflatten(self._state_def, self._state_leaves)
        return self._state_tree

    @_state.setter
    def _state(self, state: _step.TrainState | None) -> None:
        self._state_tree, self._state_leaves = state, None

    def _run_program(self, kind: str, ex, adapter) -> Any:
        """Runs ``kind``'s program on execution ``ex`` with the state as it is now.

        Train and eval replace the state with the one the program returns and
        give its device logs; predict gives its outputs. A plain compiled program
        takes the state as its leaves (``_step.flat_state``); overridden steps,
        ``run_eagerly`` and the split layouts (``shard_parameters``, a layout
        map, which compile from the state's tree) take the tree.
        """
        resident = ex.data is not None  # ex.xs: batches or indices into ex.data
        program = self._program(kind, resident, adapter)
        if isinstance(program, _override.OverrideProgram):
            out = program.execute(self._state, ex)
        elif (
            self.run_eagerly
            or self._strategy.layout_map is not None
            or self._strategy.shard_parameters
        ):
            out = program(self._state, ex.data, ex.xs, ex.steps)
        else:
            return self._run_flat(kind, program, resident, ex)
        if kind == "predict":
            return out
        self._state, logs = out
        return logs

    def _run_flat(self, kind: str, program: Callable, resident: bool, ex) -> Any:
        """``_run_program`` for a plain compiled program, the state passed as its leaves."""
        if self._state_leaves is None:
            self._state_leaves, self._state_def = jax.tree.flatten(self._state_tree)
        key = ("flat", kind, resident)
        entry = self._programs.get(key)
        if entry is None or not (entry[0] is self._state_def or entry[0] == self._state_def):
            entry = (self._state_def, *_step.flat_state(program, self._state_def, kind))
            self._programs[key] = entry
        out = entry[1](self._state_leaves, ex.data, ex.xs, ex.steps)
        if kind == "predict":
            return out
        leaves, logs = out
        self._state_tree, self._state_leaves = None, leaves
        return Packed(logs, entry[2])  # one transfer for all the logs (_fetch_logs)

    def _annotate_paths(self, module: nnx.Module) -> None:
        """Records each parameter's Keras path on it, which a layout map matches."""
        if self._strategy.layout_map is not None:
            annotate_paths(self._strategy.layout_map, module)

    def _init_state(self) -> None:
        if self._state is not None:
            return
        config = self._require_compiled("fit")
        module = self._module
        regularizers.pop_activity(module)  # an eager call's outputs, not training state
        style = _step.module_call_style(module)
        trainable = trainable_filter(module)  # nnx.Param, less the frozen layers' weights
        self._annotate_paths(module)
        if style["takes_training"]:  # the mode is an argument: one graph serves both
            train_graphdef, params, rest = nnx.split(module, trainable, ...)
            eval_graphdef = train_graphdef
        else:  # nnx's own modules keep the mode in attributes (Dropout.deterministic ...)
            module.train()
            train_graphdef, params, rest = nnx.split(module, trainable, ...)
            module.eval()
            eval_graphdef = nnx.graphdef(module)
        self._step_config = _step.StepConfig(
            train_graphdef=train_graphdef,
            eval_graphdef=eval_graphdef,
            loss=config.loss,
            metrics=tuple(config.metrics),
            weighted_metrics=tuple(config.weighted),
            optimizer=config.tx,
            compute_dtype=_compute_dtype(self._strategy),
            trainable=trainable,
            regularized=regularizers.has_regularizers(module),
            constraints=_constraints.constrained_paths(module),
            **style,
        )
        # An overridden step carries model.metrics (Keras's: the loss tracker first).
        self._overrides = _override.overrides_any(self)
        _override.check_regularizers(self, self._step_config)
        self._step_metrics = tuple(self.metrics) if self._overrides else tuple(config.metrics)
        state = _step.TrainState(
            params=params,
            rest=rest,
            opt_state=config.tx.init(params),
            loss=jnp.zeros(2, jnp.float32),
            metrics=tuple(m.init() for m in self._step_metrics),
            step=jnp.zeros((), jnp.int32),
            rng=jax.random.key(config.seed),
            label_check=_step.fresh_label_check(),
        )
        pending_lr = getattr(self.optimizer, "pending_learning_rate", None)
        if pending_lr is not None:  # set before the model was built (LearningRateScheduler)
            state = state._replace(
                opt_state=_optimizers.set_learning_rate(state.opt_state, pending_lr)
            )
            self.optimizer.pending_learning_rate = None
        if self._pending is not None:  # a checkpoint restored before the state existed
            manifest, arrays = self._pending
            state = load_state(state, manifest, arrays)
            self._pending = None
        self._state = _sharded.place_state(self._strategy, state)

    def _sync_module(self) -> None:
        """Points the nnx module's variables at the training state's arrays (no host copy).

        The state is the weights' only home once it exists: the module is a view of
        it, refreshed on each read (``Model.module``), its variables holding the
        state's device arrays as an eager call reads them (``_programs.eager_values``).
        """
        if self._state is not None and self._module is not None:
            params, rest = _sharded.eager_values((self._state.params, self._state.rest))
            nnx.update(self._module, params, rest)

    def _place_weights(self, node: nnx.Module, values: nnx.State) -> None:
        """Makes ``values`` (weights of ``node``, a module in the model) its new weights.

        The module gets them; once the training state exists, only these arrays are
        placed (as the strategy keeps variables) and replace their leaves in it: the
        rest of the state, the optimizer's included, is untouched.
        """
        self._sync_module()
        nnx.update(node, values)
        regularizers.pop_activity(self._module)
        if self._state is None:
            return
        prefix = next(tuple(p) for p, n in nnx.iter_graph(self._module) if n is node)
        trained = nnx.filterlib.to_predicate(self._step_config.trainable)
        flat = [(prefix + tuple(p), v) for p, v in nnx.to_flat_state(values)]
        params = nnx.State.from_flat_path([(p, v) for p, v in flat if trained(p, v)])
        rest = nnx.State.from_flat_path([(p, v) for p, v in flat if not trained(p, v)])
        self._state = self._state._replace(
            params=nnx.merge_state(self._state.params, self._strategy.distribute_variables(params)),
            rest=nnx.merge_state(self._state.rest, self._strategy.replicate(rest)),
        )

    def _reset_metrics(self, state: _step.TrainState) -> _step.TrainState:
        fresh = (
            jnp.zeros(2, jnp.float32),
            tuple(m.init() for m in self._step_metrics),
            _step.fresh_label_check(),
        )
        loss, metrics, label_check = self._strategy.replicate(fresh)
        return state._replace(loss=loss, metrics=metrics, label_check=label_check)

    def _program(self, kind: str, resident: bool, adapter=None) -> Callable:
        # train_step and test_step share the override's state form: both run as overrides
        # when either is overridden; predict only when predict_step is.
        step = {"train": "train_step", "eval": "test_step", "predict": "predict_step"}[kind]
        custom = _override.overridden(self, step) is not None
        if custom or (self._overrides and kind != "predict"):
            form = _override.data_form(adapter)  # what `data` holds: one program each
            key = (kind, "override", form)
            if key not in self._programs:
                self._programs[key] = _override.OverrideProgram(kind, self, self._strategy, form)
            return self._programs[key]
        key = (kind, resident)
        if key not in self._programs and self._strategy.layout_map is not None:
            self._programs[key] = _model_parallel.fused_program(
                kind, self._step_config, self._strategy, resident=resident
            )
        if key not in self._programs and self._strategy.shard_parameters:
            self._programs[key] = _sharded.fused_program(
                kind, self._step_config, self._strategy, resident=resident
            )
        if key not in self._programs:
            self._programs[key] = _step.fused_program(
                kind, self._step_config, self._strategy.mesh, resident=resident
            )
        if self.run_eagerly:
            return _uncompiled(self._programs[key])
        return self._programs[key]

    # -- input --------------------------------------------------------------

    def _adapter(
        self,
        x,
        y,
        sample_weight,
        *,
        batch_size,
        steps,
        shuffle,
        class_weight,
        steps_name="steps_per_epoch",
    ):
        return _adapter.make_adapter(
            self._strategy,
            x,
            y,
            sample_weight,
            batch_size=batch_size,
            steps=steps,
            steps_name=steps_name,
            shuffle=shuffle,
            class_weight=class_weight,
            steps_per_execution=self.steps_per_execution,
            seed=self._config.seed,
        )

    # -- fit ----------------------------------------------------------------

    def fit(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        epochs: int = 1,
        verbose: int | str = "auto",
        callbacks: Sequence[Any] | None = None,
        validation_split: float = 0.0,
        validation_data: Any = None,
        shuffle: bool = True,
        class_weight: dict | None = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        validation_batch_size: int | None = None,
        validation_freq: int = 1,
    ):
        """Trains the model (Keras's ``fit``); returns the ``History``.

        ``x`` may be arrays (with ``y``), a phalanx ``Dataset``, a distributed
        dataset, or a Python generator of ``(x, y[, sample_weight])`` batches.
        ``batch_size`` is the *global* batch, split over the replicas; one that does not
        split is padded with masked rows to the next multiple of the replicas.

        Raises:
          BatchNotDivisibleError: with several processes, a process's share of a
            ``Dataset``'s batch does not split over its devices.
          NotCompiledError: ``compile`` was not called (a ``RuntimeError``).
          ScopeError: called inside the scope of another strategy than the model's.
        """
        self._require_compiled("fit", by_user=True)
        self._check_current_strategy("fit")
        _check_not_a_function(x, "fit")
        _check_not_a_function(validation_data, "fit", "validation_data=")
        check_inputs(x, y, sample_weight, where="fit", validation_data=validation_data)
        _check_epoch_count(epochs, "epochs")  # 0, or initial_epoch >= epochs: no epoch, as Keras
        _check_epoch_count(initial_epoch, "initial_epoch", negative=True)  # Keras: epoch -1 runs
        _check_positive_int(validation_freq, "validation_freq")
        if validation_split and validation_data is None:
            (x, y, sample_weight), validation_data = _adapter.split_validation(
                x, y, sample_weight, validation_split
            )
        train = self._adapter(
            x,
            y,
            sample_weight,
            batch_size=batch_size,
            steps=steps_per_epoch,
            shuffle=shuffle,
            class_weight=class_weight,
        )
        train.first_epoch = initial_epoch  # arrays: their passes count from it, as Keras
        opt_state = None if self._state is None else self._state.opt_state
        steps = (train.steps_per_epoch or 0) * (epochs - initial_epoch)
        _optimizers.check_schedule(self._config.optimizer, opt_state, steps)
        val = None
        if validation_data is not None:
            vx, vy, vsw = _adapter.split_batch(_as_tuple(validation_data))
            val = self._adapter(
                vx,
                vy,
                vsw,
                # fit's batch_size is for arrays: a validation dataset is batched already
                batch_size=validation_batch_size
                or (batch_size if _adapter.is_array_like(vx) else None),
                steps=validation_steps,
                shuffle=False,
                class_weight=None,
                steps_name="validation_steps",
            )
            self._check_targets(val, "validation_data")  # arrays: before any training
        cbs = self._callbacks(callbacks, verbose, epochs=epochs, steps=train.steps_per_epoch)
        self.stop_training = False
        try:
            logs = self._fit_epochs(train, val, cbs, initial_epoch, epochs, validation_freq)
        except BaseException:
            cbs._release_after_error()  # threads, signal handlers, open event files
            raise
        if epochs > 0:  # use_ema: the weights become their average, as Keras's fit
            self._state = finalize_weights(self._state)
        cbs.on_train_end(logs)
        self._sync_module()
        return self.history

    def _fit_epochs(self, train, val, cbs, initial_epoch, epochs, validation_freq) -> dict:
        """``fit``'s epochs, from ``on_train_begin`` to the last ``on_epoch_end``; the logs."""
        cbs.on_train_begin()
        resume, self._resume = self._resume, None  # BackupAndRestore restored a position
        logs: dict = {}
        with _read_ahead.reading_ahead(train, epochs):  # the next epoch's input, while one runs
            for epoch in range(initial_epoch if resume is None else resume.epoch, epochs):
                cbs.on_epoch_begin(epoch)
                here = resume if resume is not None and epoch == resume.epoch else None
                logs = self._run_epoch("train", train, epoch, cbs, where="fit's x", resume=here)
                _adapter.stop_after_epoch(self, train, epochs - epoch - 1)
                self._position = _checkpointing.TrainPosition(
                    epoch + 1, 0, self._position.input_state, logs
                )
                if val is not None and (epoch + 1) % validation_freq == 0:
                    val_logs = self._evaluate_adapter(val, cbs, where="validation_data")
                    logs.update({f"val_{k}": v for k, v in val_logs.items()})
                cbs.on_epoch_end(epoch, logs)
                if self.stop_training:
                    break
        return logs

    def _callbacks(self, callbacks, verbose, *, epochs, steps, progbar=True):
        _check_verbose(verbose)
        # params["verbose"] stays "auto" when not given, as Keras 3 (ProgbarLogger reads it as 1).
        verbose = verbose if verbose == "auto" else int(verbose)
        return CallbackList(
            callbacks,  # one callback, or (nested) lists: CallbackList flattens, as Keras
            add_history=True,
            add_progbar=progbar and verbose != 0,
            model=self,
            verbose=verbose,
            epochs=epochs,
            steps=steps,
        )

    def _run_epoch(self, kind: str, adapter, epoch: int, cbs, *, where: str, resume=None) -> dict:
        """Runs one epoch of executions (``_loop.pipelined``). Returns the last logs.

        ``where`` names the input in errors (``"fit's x"``, ``"validation_data"``).
        ``resume`` (a ``TrainPosition`` in this epoch) starts after the steps it
        counts, with the metric accumulators as restored.
        """
        start = resume.step if resume is not None else 0
        state = resume.input_state if resume is not None else None
        executions = self._prepared(adapter, epoch, where=where, start=start, input_state=state)
        if executions is None:  # resumed after the epoch's last step: its restored logs
            return self._restored_logs(resume)
        begin, end = _hooks(cbs, kind)
        if start == 0:
            self._state = self._reset_metrics(self._state)

        def dispatch(ex):
            # The model's state is the one copy: each execution reads it as it is now, so a
            # callback's change (learning rate, set_weights) takes effect from the next
            # step. Training donates it, so the new state replaces it at once; the
            # position moves with it (a checkpoint saves the two together).
            begin(ex.first_step)
            dev_logs = self._run_program(kind, ex, adapter)
            if kind == "train" and ex.first_step == start:  # summary()'s memory analysis
                self._train_signature = ex.signature()
            if kind == "train":
                self._position = _checkpointing.TrainPosition(
                    epoch, ex.first_step + ex.steps, ex.input_state
                )
            return dev_logs

        def stop() -> bool:
            return self.stop_training if kind == "train" else self.stop_evaluating

        logs: dict = {}
        for ex, logs in _loop.pipelined(
            executions,
            dispatch,
            self._fetch_logs,
            phase=kind,
            should_stop=stop,
            ahead=not _loop.may_act_per_batch(cbs, kind),
        ):
            if kind == "train" and self._position.step == ex.first_step + ex.steps:
                self._position = self._position._replace(logs=logs)
            end(_last_step_index(self, ex), logs)
        return logs

    def _restored_logs(self, resume) -> dict:
        """The epoch's logs from the restored metric accumulators (a resumed epoch that has
        no step left); the saved logs while the model is not built yet, or when an
        overridden step made them (its logs are its own, not the accumulators')."""
        if self._state is None or self._overrides:
            return dict(resume.logs or {})
        results = jax.jit(functools.partial(_step.results, self._step_config))
        return self._fetch_logs(None, results(self._state))

    def _prepared(self, adapter, epoch: int, *, where: str | None, start=0, input_state=None):
        """The epoch's executions, once the model is built and its state placed.

        A model that has not seen data yet is built from the first execution's
        input shape (Keras builds on first use too). Unless ``where`` is None
        (predict), the input must hold targets when the loss or metrics need them.
        ``start`` and ``input_state`` resume an epoch; None when nothing is left.
        """
        executions = adapter.executions(epoch, start, input_state)
        first = next(executions, None)
        if first is None and start > 0:
            if self.built:
                self._init_state()
            return None
        if first is None:
            raise ValueError(
                "The input yielded no batches. Check that the dataset is not empty (or "
                "exhausted: a generator can be iterated once; use a Dataset with .repeat())."
            )
        if where is not None:
            self._check_targets(adapter, where)
        # The strategy's batch-size advice (TPUStrategy: per-replica multiples of 128).
        self._strategy._check_batch(adapter.global_batch_size)
        self._build_from_example(first)  # a Model hook: subclassed models
        if not self.built:
            if first.data is not None:
                shape = jax.tree.leaves(first.data[0])[0].shape[1:]
            else:
                shape = jax.tree.leaves(first.xs[0])[0].shape[2:]
            self.build(shape)
        self._init_state()
        targets = where is not None and getattr(adapter, "has_targets", True) is not False
        _first_batch.check_first_batch(
            self, first, with_targets=targets, training=where == "fit's x"
        )
        executions = itertools.chain([first], executions)
        if getattr(adapter, "process_local", False) and jax.process_count() > 1:
            executions = _loop.in_step(executions, "input")
        return executions

    def _check_targets(self, adapter, where: str) -> None:
        """Raises ``MissingTargetsError`` when the input has no ``y`` but the loss needs one.

        A decision of this project: a compiled loss or metric always needs
        targets, even one that ignores ``y_true`` (rare; pass zeros), since
        zeros put in place of missing targets train silently on wrong data.
        ``has_targets`` is None while a stream's first batch is unread.
        """
        if getattr(adapter, "has_targets", True) is not False:
            return
        config = self._require_compiled("fit")
        if config.loss is not None:
            needs = f"the loss {getattr(config.loss, 'name', config.loss)!r}"
        elif config.metrics:
            needs = f"the metric {config.metrics[0].name!r}"
        else:
            return
        raise MissingTargetsError.of(where, needs)

    def _raise_on_bad_labels(self, check) -> None:
        """Raises ``LabelOutOfRangeError`` when the step saw labels outside the loss's range."""
        _, count, low, high, step, classes = (float(v) for v in check)
        if count > 0:
            value = low if low < 0 else high  # not a whole number: said so (float labels)
            name = getattr(self._step_config.loss, "name", "the loss")
            raise LabelOutOfRangeError.of(value, int(classes), int(step), int(count), name)

    def _fetch_logs(self, ex, dev_logs) -> dict:
        del ex
        if self._overrides:  # an override's logs, as Keras reports them
            logs = jax.device_get(dev_logs)
            if not isinstance(logs, dict):  # a bare value (None: no logs)
                logs = {} if logs is None else {"logs": logs}
            return pythonify_logs(logs)
        host = dev_logs.fetch() if isinstance(dev_logs, Packed) else jax.device_get(dev_logs)
        self._raise_on_bad_labels(host["_label_check"])
        # Keras's order: the loss, then the metrics as compiled (pytrees sort dict keys).
        order = ["loss"] + [m.name for m in self._step_config.metrics]
        return {k: float(host[k]) for k in order if k in host}

    # -- evaluate / predict -------------------------------------------------------

    def evaluate(
        self,
        x: Any = None,
        y: Any = None,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        sample_weight: Any = None,
        steps: int | None = None,
        callbacks: Sequence[Any] | None = None,
        return_dict: bool = False,
    ):
        """Returns the loss and metrics on the given data (Keras's ``evaluate``).

        Every example counts exactly once: a short last batch is padded and
        masked, so the result equals one device's over the same examples. A
        callback that sets ``model.stop_evaluating = True`` ends it after the
        current execution, as Keras 3 (``model.stop_predicting`` for ``predict``).
        """
        self._require_compiled("evaluate", by_user=True)
        self._check_current_strategy("evaluate")
        _check_not_a_function(x, "evaluate")
        check_inputs(x, y, sample_weight, where="evaluate")
        adapter = self._adapter(
            x,
            y,
            sample_weight,
            batch_size=batch_size,
            steps=steps,
            shuffle=False,
            class_weight=None,
            steps_name="steps",
        )
        cbs = self._callbacks(callbacks, verbose, epochs=1, steps=adapter.steps_per_epoch)
        logs = self._evaluate_adapter(adapter, cbs, where="evaluate's x")
        return _format_logs(logs, return_dict)

    def _evaluate_adapter(self, adapter, cbs, *, where: str) -> dict:
        self.stop_evaluating = False  # Keras 3: each evaluate (and validation) starts anew
        if cbs is not None:
            cbs.on_test_begin()
        saved = self._state
        logs = self._run_epoch("eval", adapter, 0, cbs, where=where)
        self._state = saved
        if cbs is not None:
            cbs.on_test_end(logs)
        return logs

    def predict(
        self,
        x: Any,
        batch_size: int | None = None,
        verbose: int | str = "auto",
        steps: int | None = None,
        callbacks: Sequence[Any] | None = None,
    ) -> Any:
        """Returns the model's outputs for every input example, in order (numpy)."""
        if self._config is None:  # Keras predicts with an uncompiled model
            self.compile(optimizer="sgd", loss=None)
            self._predict_only = True
        self._check_current_strategy("predict")
        _check_not_a_function(x, "predict")
        check_inputs(x, where="predict")
        self._require_compiled("predict")
        adapter = self._adapter(
            x,
            None,
            None,
            batch_size=batch_size,
            steps=steps,
            shuffle=False,
            class_weight=None,
            steps_name="steps",
        )
        cbs = self._callbacks(callbacks, verbose, epochs=1, steps=adapter.steps_per_epoch)
        self.stop_predicting = False
        cbs.on_predict_begin()
        executions = self._prepared(adapter, 0, where=None)

        def dispatch(ex):
            cbs.on_predict_batch_begin(ex.first_step)
            return self._run_program("predict", ex, adapter)

        def fetch(ex, out):
            if isinstance(out, _override.Outputs):  # an overridden predict_step's
                return _override.predictions(ex, out)
            return _loop.unpad_predictions(ex, out, adapter)

        outputs = []
        ahead = not _loop.may_act_per_batch(cbs, "predict")
        for ex, parts in _loop.pipelined(
            executions,
            dispatch,
            fetch,
            phase="predict",
            should_stop=lambda: self.stop_predicting,
            ahead=ahead,
        ):
            outputs.extend(parts)
            batch = jax.tree.map(lambda *p: np.concatenate(p), *parts)  # Keras: this execution's
            cbs.on_predict_batch_end(_last_step_index(self, ex), {"outputs": batch})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict got no input batches: the input is empty.")
        return jax.tree.map(lambda *parts: np.concatenate(parts), *outputs)

    # -- single batches -----------------------------------------------------

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """Runs one training step on one global batch; returns its loss and metrics."""
        self._require_compiled("train_on_batch", by_user=True)
        self._check_current_strategy("train_on_batch")
        adapter = self._one_batch_adapter(x, y, sample_weight, class_weight)
        logs = self._run_epoch("train", adapter, 0, None, where="train_on_batch's x")
        return _format_logs(logs, return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """Returns the loss and metrics of one batch, without training."""
        self._require_compiled("test_on_batch", by_user=True)
        self._check_current_strategy("test_on_batch")
        adapter = self._one_batch_adapter(x, y, sample_weight, None)
        logs = self._evaluate_adapter(adapter, None, where="test_on_batch's x")
        return _format_logs(logs, return_dict)

    def predict_on_batch(self, x):
        """Returns the outputs for one batch."""
        return self.predict(x, batch_size=_adapter._leading(x), verbose=0)

    def _one_batch_adapter(self, x, y, sample_weight, class_weight):
        n = _adapter._leading(x)
        size = (
            math.ceil(n / self._strategy.num_replicas_in_sync) * self._strategy.num_replicas_in_sync
        )
        return _adapter.ArrayAdapter(
            x,
            y,
            sample_weight,
            batch_size=size,
            steps_per_execution=1,
            strategy=self._strategy,
            class_weight=class_weight,
            resident=False,
        )

    # -- the optimizer's state in a .keras file (phalanx.saving reads and writes it) --

    def _optimizer_values(self) -> tuple[Any, Any, int] | None:
        """``(params, opt_state, step)`` on the host, or None before the state exists (on
        every process: arrays split over processes are gathered)."""
        if self._state is None:
            return None
        state = self._state
        params, opt_state = _sharded.host_values((state.params, state.opt_state))
        return params, opt_state, int(jax.device_get(state.step))

    def _set_optimizer_values(self, opt_state: Any, step: int) -> None:
        """Makes ``opt_state`` (host arrays) and ``step`` the optimizer's state."""
        self._init_state()
        state = self._state._replace(opt_state=opt_state, step=np.asarray(step, np.int32))
        self._state = _sharded.place_state(self._strategy, state)

    # -- checkpoints (the protocol phalanx.checkpoint calls) ------------------

    def _resume_restored(self) -> _checkpointing.TrainPosition:
        """``callbacks``' ``Resumable``: a checkpoint was restored (``BackupAndRestore``);
        the next ``fit`` starts at its position, returned."""
        self._resume = self._position
        return self._position

    def _checkpoint_expect(self) -> dict | None:
        """The manifest (name -> shape, dtype) a restored checkpoint must match.

        None while the state cannot exist yet (not built or not compiled): the
        restored arrays then wait, and are checked when ``fit`` makes the state.
        """
        if self._state is None:
            if not (self.built and self._config is not None):
                return None
            self._init_state()
        return state_items(self._state)[1]

    def _checkpoint_items(self) -> tuple[dict, dict, dict]:
        """``(arrays, manifest, data)``: the training state and position to save."""
        if self._state is None and self._pending is None:
            if not (self.built and self._config is not None):
                from ..errors import CheckpointError

                raise CheckpointError(
                    f"Model {self.name!r} has no training state to save yet: compile it and "
                    "build it (build(input_shape), fit, or call it on a batch) first."
                )
            self._init_state()
        if self._state is None:  # restored, not yet placed: save what was restored
            manifest, arrays = self._pending
        else:
            arrays, manifest = state_items(self._state)
        return arrays, manifest, {"position": self._position.to_json(), "name": self.name}

    def _checkpoint_load(self, manifest: dict, arrays: dict, data: dict) -> None:
        """Makes a checkpoint's arrays (host) and position this model's training state."""
        position = _checkpointing.TrainPosition.from_json(data.get("position", {}))
        if self._state is None:
            self._pending = (manifest, arrays)  # checked and placed by _init_state
        else:
            state = load_state(self._state, manifest, arrays)
            # The restored host arrays are ours alone: placed without another copy.
            self._state = _sharded.place_state(self._strategy, state, copy=False)
        self._position = position


def _compute_dtype(strategy):
    from ..mixed_precision._policy import compute_dtype  # the global policy, else the strategy's

    return compute_dtype(strategy)


def _last_step_index(model: Trainer, ex) -> int:
    """The batch index the batch-end hooks get for an execution, as Keras 3's EpochIterator:
    its first step + ``steps_per_execution`` - 1, also for a last, shorter execution
    (7 steps by 3: 2, 5, 8). phalanx's step-counting callbacks clamp it to ``params["steps"]``.
    """
    return ex.first_step + model.steps_per_execution - 1


def _hooks(cbs, kind):
    if cbs is None:
        return (lambda step: None), (lambda step, logs: None)
    if kind == "train":
        return cbs.on_train_batch_begin, cbs.on_train_batch_end
    return cbs.on_test_batch_begin, cbs.on_test_batch_end


def _format_logs(logs: dict, return_dict: bool):
    if return_dict:  # Keras 3 sorts the names; the list keeps compile's order
        return dict(sorted(logs.items()))
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def _as_tuple(data):
    return data if isinstance(data, tuple) else (data,)


def _check_not_a_function(x, method: str, argument: str = "") -> None:
    """Refuses an input function (Estimator's ``input_fn``): Keras takes its dataset."""
    if callable(x) and not hasattr(x, "__iter__") and not hasattr(x, "__next__"):
        name = getattr(x, "__name__", type(x).__name__)
        raise FitInputError(
            f"{method}() got the function {name}, not data: Keras methods take the dataset "
            f"an input function returns. Call it: {method}({argument}{name}())."
        )


def _check_epoch_count(value, name: str, *, negative: bool = False) -> None:
    """``epochs`` must be an int >= 0; ``initial_epoch`` (``negative``) any int.

    Keras 3 runs ``initial_epoch=-1`` as an epoch numbered -1 (then 0, ...), and
    so does phalanx; ``epochs=-1`` trains nothing in Keras, silently: refused.
    """
    bad = isinstance(value, bool) or not isinstance(value, int | np.integer)
    if bad or (value < 0 and not negative):
        what = "an int" if negative else "an int >= 0 (an epoch count)"
        raise FitInputError(
            f"fit's {name} must be {what}, got {type(value).__name__} "
            f"{value!r}. epochs=0, or initial_epoch >= epochs, trains no epoch (an empty "
            "History), as Keras."
        )


def _check_verbose(verbose) -> None:
    # Keras 3 takes any value (verbose="x" is truthy: a progress bar that prints nothing).
    if isinstance(verbose, bool) or verbose == "auto":
        return
    if not isinstance(verbose, int | np.integer) or verbose not in (0, 1, 2):
        raise FitInputError(
            f"verbose must be 'auto', 0 (silent), 1 (a progress bar) or 2 (one line per "
            f"epoch), got {verbose!r} ({type(verbose).__name__}). Pass verbose=0 to print "
            "nothing."
        )


def _check_jit_compile(jit_compile) -> None:
    """Keras's ``jit_compile``: True, False (the steps run un-jitted) or "auto"."""
    if isinstance(jit_compile, bool | np.bool_) or jit_compile == "auto":
        return
    raise CompileArgumentError(
        f"jit_compile must be True, False or 'auto' (as Keras), got {jit_compile!r} "
        f"({type(jit_compile).__name__}). Leave the default to compile the steps with XLA, "
        "or pass False (or run_eagerly=True) to run them un-jitted for debugging."
    )


def _check_run_eagerly(run_eagerly) -> None:
    if not isinstance(run_eagerly, bool | np.bool_):
        raise CompileArgumentError(
            f"run_eagerly must be True or False, got {run_eagerly!r} "
            f"({type(run_eagerly).__name__})."
        )


def _uncompiled(program: Callable) -> Callable:
    """``program`` run un-jitted: each step's Python (a layer's ``print``, ``pdb``) runs."""

    def run(*args):
        with jax.disable_jit():
            return program(*args)

    return run


def _check_positive_int(value, name: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise FitInputError(f"{name} must be a positive int, got {value!r}.")
