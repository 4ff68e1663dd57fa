"""``Dataset.prefetch``: a bounded producer thread that runs the pipeline ahead of the consumer.

The producer thread holds the input iterator, never the consumer object, so
an abandoned iterator is garbage-collected; its finalizer stops the thread
(which wakes at least every 0.1 s). The thread is started by
``phalanx._threads.start_thread``, which also stops it before the interpreter
ends (an iterator left open must not leave a thread inside a device copy). An error in the producer is re-raised in
the consumer at the position where it happened. The checkpoint state is the
input's state right after the last element the consumer received: every
queued element carries that snapshot, so read-ahead is never saved.

``fit`` may read a prefetched pipeline's batches from below the prefetch
(``bypass``: as indices, ``_index_batches.index_batches``); the prefetch then
starts no thread, and its state is its input's.
"""

from __future__ import annotations

import functools
import queue
import threading
import weakref
from typing import Any

from .._threads import start_thread
from ..errors import DatasetArgumentError
from ._dataset import Dataset
from ._iterator import DatasetIterator, _safe_state, _unwrap_state
from ._options import AUTOTUNE

_OK, _END, _ERROR = 0, 1, 2
_POLL_S = 0.1


class PrefetchDataset(Dataset):
    """``Dataset.prefetch``."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, buffer_size: int):
        if buffer_size is None or (
            buffer_size == AUTOTUNE and not isinstance(buffer_size, bool)
        ):  # None is AUTOTUNE in tf.data too
            buffer_size = 2
        if isinstance(buffer_size, bool) or not isinstance(buffer_size, int) or buffer_size < 0:
            raise DatasetArgumentError(
                f"prefetch: buffer_size must be an int >= 0, AUTOTUNE (-1) or None, got "
                f"{buffer_size!r}. Use prefetch(AUTOTUNE) or prefetch(2)."
            )
        self._input, self._size = input_dataset, int(buffer_size)

    def _iterator(self, ctx):
        if self._size == 0:  # tf.data: prefetch(0) reads nothing ahead
            return self._input._iterator(ctx)
        return _PrefetchIterator(self._input._iterator(ctx), self._size)

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec


def _close(it: Any) -> None:
    closer = getattr(it, "close", None)
    if closer is not None:
        closer()


def _put(q: queue.Queue, stop: threading.Event, item: Any) -> bool:
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_S)
            return True
        except queue.Full:
            continue
    return False


def _produce(child: DatasetIterator, q: queue.Queue, stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            try:
                x = next(child)
            except StopIteration:
                _put(q, stop, (_END, None, _safe_state(child)))
                return
            except Exception as e:  # raised at its position; the reading goes on, as tf.data
                if not _put(q, stop, (_ERROR, e, _safe_state(child))):
                    return
                continue
            if not _put(q, stop, (_OK, x, _safe_state(child))):
                return
    except BaseException as e:  # re-raised in the consumer
        _put(q, stop, (_ERROR, e, None))
    finally:
        if stop.is_set():
            _close(child)


def _shutdown(stop: threading.Event, q: queue.Queue) -> None:
    stop.set()
    try:
        while True:
            q.get_nowait()
    except queue.Empty:
        pass


class _PrefetchIterator(DatasetIterator):
    """Runs ``child`` (any iterator; checkpointable when it has ``get_state``) ahead in a thread.

    Used by ``Dataset.prefetch``, and by the distribute and train layers to copy
    batches to devices ahead of the step (``background``).
    """

    def __init__(self, child: Any, size: int):
        self.child, self.size = child, size
        self.state = _safe_state(child)
        self.thread: threading.Thread | None = None
        self.done = False
        self._finalizer = None
        self.bypassed = False

    def bypass(self) -> Any:
        """Hands over the input to be read directly, from now on and by everyone: no
        thread starts, ``__next__`` and ``get_state`` read the input. Returns the input.

        Raises:
          RuntimeError: the thread started already (it may hold read-ahead elements).
        """
        if self.thread is not None:
            raise RuntimeError("prefetch: bypass must be called before the first element")
        self.bypassed = True
        return self.child

    def index_batches(self) -> Any | None:
        """The input's batch node, bypassing this prefetch (its thread would only run the same
        reads ahead; its state is then its input's); None once the thread started."""
        if self.thread is not None:
            return None
        node = self.child.index_batches()
        if node is not None:
            self.bypass()
        return node

    def start(self) -> None:
        """Start reading ahead now, before the first ``__next__`` (which otherwise starts it)."""
        if self.thread is None and not self.done:
            self._start()

    def _start(self) -> None:
        self.q: queue.Queue = queue.Queue(maxsize=self.size)
        self.stop = threading.Event()
        self._finalizer = weakref.finalize(self, _shutdown, self.stop, self.q)
        self.thread = start_thread(
            _produce,
            (self.child, self.q, self.stop),
            name="phalanx-prefetch",
            stop=self.stop,
            wake=functools.partial(_shutdown, self.stop, self.q),
        )

    def __next__(self):
        if self.bypassed:
            return next(self.child)
        if self.done:
            raise StopIteration
        if self.thread is None:
            self._start()
        while True:
            try:
                kind, x, state = self.q.get(timeout=_POLL_S)
                break
            except queue.Empty:
                if not self.thread.is_alive() and self.q.empty():
                    self.done = True
                    raise RuntimeError(
                        "prefetch: the producer thread ended without a result"
                    ) from None
        if kind == _ERROR:
            if state is None:  # the producer itself failed: nothing follows
                self.done = True
            else:  # an element's error: the next call reads on, as tf.data
                self.state = state
            raise x
        self.state = state
        if kind == _END:
            self.done = True
            self.close()
            raise StopIteration
        return x

    def close(self) -> None:
        if self._finalizer is not None:
            self._finalizer()
            if self.thread is not threading.current_thread():
                self.thread.join(timeout=1.0)
            if self.thread.is_alive():
                return  # the producer closes its input when it wakes
        _close(self.child)

    def get_state(self):
        if self.bypassed:
            return {"child": self.child.get_state()}
        return {"child": _unwrap_state(self.state)}

    def set_state(self, state):
        if self.thread is not None:
            raise RuntimeError("prefetch: set_state must be called on a fresh iterator")
        self.child.set_state(state["child"])
        self.state = state["child"]


def background(iterator: Any, size: int = 1) -> _PrefetchIterator:
    """Runs ``iterator`` ahead in a bounded background thread (``size`` items).

    Errors re-raise in the consumer where they happened; an abandoned iterator
    stops its thread; ``get_state()`` (when ``iterator`` has one) is the state
    after the last item *consumed*, never the read-ahead.
    """
    return _PrefetchIterator(iterator, size)
