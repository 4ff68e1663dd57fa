"""Counting training steps through fused executions, for step-frequency callbacks."""

from __future__ import annotations


class StepCounter:
    """Total training steps done in ``fit``, from ``on_train_batch_end`` step indices.

    With ``steps_per_execution=N`` a callback sees one ``on_train_batch_end``
    per execution, with the 0-based index of its last step; the counter turns
    that into the number of steps done since training started, and
    ``crossed(freq)`` says whether the last execution passed a multiple of
    ``freq`` (a frequency of 5 fires at steps 6 and 12 with executions of 3).
    """

    def __init__(self) -> None:
        self.total = 0
        self.previous = 0
        self._epoch_start = 0
        self._steps_per_epoch: int | None = None

    def reset(self) -> None:
        """Back to zero steps (at ``on_train_begin``)."""
        self.total = self.previous = self._epoch_start = 0

    def start_epoch(self, epoch: int, steps_per_epoch: int | None) -> None:
        """Marks an epoch start; a run resumed at ``epoch > 0`` counts the epochs before it."""
        if self.total == 0 and epoch > 0 and steps_per_epoch:
            self.total = self.previous = epoch * steps_per_epoch
        self._epoch_start = self.total
        self._steps_per_epoch = steps_per_epoch

    def end_execution(self, batch: int) -> int:
        """Records an execution ending at step ``batch`` of the epoch; returns the total."""
        self.previous = self.total
        self.total = self._epoch_start + steps_done(batch, self._steps_per_epoch)
        return self.total

    def crossed(self, freq: int) -> bool:
        """Whether the last execution reached or passed a multiple of ``freq`` steps."""
        return self.total // freq > self.previous // freq


def steps_done(batch: int, steps_per_epoch: int | None) -> int:
    """The steps of the epoch done when a batch-end hook gets index ``batch``.

    Keras 3 numbers a last, shorter execution as a whole one (7 steps by 3 end
    at index 8), so the count is clamped to the epoch's steps when they are known.
    """
    done = batch + 1
    return done if not steps_per_epoch else min(done, steps_per_epoch)
