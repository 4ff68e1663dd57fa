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

    def reset(self) -> None:
        """Back to zero steps (at ``on_train_begin``)."""
        self.total = self.previous = self._epoch_start = 0

    def start_epoch(self, epoch: int, steps_per_epoch: int | None) -> None:
        """Marks an epoch start; a run resumed at ``epoch > 0`` counts the epochs before it."""
        if self.total == 0 and epoch > 0 and steps_per_epoch:
            self.total = self.previous = epoch * steps_per_epoch
        self._epoch_start = self.total

    def end_execution(self, batch: int) -> int:
        """Records an execution ending at step ``batch`` of the epoch; returns the total."""
        self.previous = self.total
        self.total = self._epoch_start + batch + 1
        return self.total

    def crossed(self, freq: int) -> bool:
        """Whether the last execution reached or passed a multiple of ``freq`` steps."""
        return self.total // freq > self.previous // freq
