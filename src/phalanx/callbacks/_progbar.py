"""The Keras-style progress bar line, drawn live with rich or printed plain.

One ``Progbar`` covers one epoch (or one ``evaluate``/``predict`` run). On a
terminal it redraws a single live line with rich; elsewhere (CI logs, files,
pipes) it prints one plain line when it is finalized, so logs carry no
carriage returns. The text is Keras 3's::

    59/59 ━━━━━━━━━━━━━━━━━━━━ 1s 9ms/step - accuracy: 0.9712 - loss: 0.0931
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Console
from rich.errors import LiveError
from rich.live import Live
from rich.text import Text

BAR_CHAR = "━"


def order_metrics(values: Mapping[str, Any]) -> list[str]:
    """Keras 3's display order: training names sorted, then ``val_`` names sorted."""
    return sorted(values, key=lambda k: (k.startswith("val_"), k))


def format_value(value: Any) -> str:
    """A metric as Keras prints it: 4 decimals, or scientific below 1e-3."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    return f"{number:.4f}" if abs(number) > 1e-3 else f"{number:.4e}"


def format_step_time(seconds: float, unit_name: str) -> str:
    """Time per step with adaptive units, as Keras: ``1s/step``, ``9ms/step``, ``85us/step``."""
    if seconds >= 1 or seconds == 0:
        return f"{seconds:.0f}s/{unit_name}"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.0f}ms/{unit_name}"
    return f"{seconds * 1e6:.0f}us/{unit_name}"


def format_eta(seconds: float) -> str:
    """Remaining time as Keras: ``42s``, ``3:07``, ``1:02:03``."""
    whole = int(seconds)
    if seconds > 3600:
        return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
    if seconds > 60:
        return f"{whole // 60}:{whole % 60:02d}"
    return f"{whole}s"


class Progbar:
    """One progress bar: ``update`` it with the steps done, and it draws or prints.

    Args:
        target: Steps expected, or ``None`` when unknown.
        verbose: 1 draws the bar (live on a terminal, one plain line at the
            end otherwise); 2 prints one summary line at the end; 0 is silent.
        width: Characters of the bar.
        interval: Least seconds between two live redraws.
        unit_name: What a step is called in ``9ms/step``.
        console: The rich console to draw on; a new one on ``sys.stdout``
            when ``None``.
        clock: Seconds, monotonic; replaceable in tests.
    """

    def __init__(
        self,
        target: int | None,
        *,
        verbose: int = 1,
        width: int = 20,
        interval: float = 0.05,
        unit_name: str = "step",
        console: Console | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.verbose = verbose
        self.width = width
        self.interval = interval
        self.unit_name = unit_name
        self.console = console if console is not None else Console()
        self._clock = clock
        self._start = clock()
        self._last_draw = -math.inf
        self._first_update: tuple[int, float] | None = None
        self._values: dict[str, Any] = {}
        self._live: Live | None = None
        self._finished = False
        self._live_failed = False

    @property
    def dynamic(self) -> bool:
        """Whether the bar redraws in place (a terminal or notebook) rather than printing plain."""
        return self.console.is_terminal or self.console.is_jupyter

    def update(
        self, current: int, values: Mapping[str, Any] | None = None, *, finalize: bool | None = None
    ) -> None:
        """Moves the bar to ``current`` steps done and shows ``values`` as they are.

        ``values`` are the running averages that ``fit`` reports; they are
        displayed as given, not averaged again. ``finalize`` (default: when
        ``current`` reaches the target) ends the bar and prints its last line.
        """
        if self._finished:
            return
        if finalize is None:
            finalize = self.target is not None and current >= self.target
        self._values.update(values or {})
        now = self._clock()
        per_step = self._step_duration(current, now)
        if self.verbose == 1:
            self._draw(current, now, per_step, finalize)
        elif self.verbose == 2 and finalize:
            self.print_line(self._summary_line(current, now, per_step))
        if finalize:
            self._finished = True

    def close(self) -> None:
        """Stops a live display left open (an interrupted epoch); idempotent."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _step_duration(self, current: int, now: float) -> float:
        # The first update includes compilation: time later steps from it, as
        # Keras ignores its first step, also when one update covers N steps.
        if not current:
            return 0.0
        if self._first_update is None:
            self._first_update = (current, now)
        first_steps, first_time = self._first_update
        if current > first_steps:
            return (now - first_time) / (current - first_steps)
        return (now - self._start) / current

    def _draw(self, current: int, now: float, per_step: float, finalize: bool) -> None:
        if not self.dynamic or self._live_failed:
            if finalize:
                self.print_line(self._bar_line(current, now, per_step, finalize))
            return
        if not finalize and now - self._last_draw < self.interval:
            return
        self._last_draw = now
        text = self._bar_line(current, now, per_step, finalize)
        if finalize:
            # The live frame goes away and the last line is printed for good, wrapped by
            # the terminal rather than cut, so the scrollback keeps every metric.
            self.close()
            self.print_line(text)
            return
        text.no_wrap, text.overflow = True, "ellipsis"  # one screen line while it moves
        if self._live is None:
            live = Live(text, console=self.console, auto_refresh=False, transient=True)
            try:
                live.start()
            except LiveError:  # another live display owns the console: print the end only
                self._live_failed = True
                return
            self._live = live
        self._live.update(text, refresh=True)

    def print_line(self, text: Text) -> None:
        """Prints one finished line above (or instead of) the live bar."""
        if self.dynamic:
            self.console.print(text, soft_wrap=True, highlight=False)
        else:
            self.console.file.write(text.plain + "\n")
            self.console.file.flush()

    def _counter(self, current: int) -> str:
        digits = int(math.log10(self.target)) + 1 if self.target else 1
        return f"{current:>{digits}}/{self.target}"

    def _metrics(self) -> str:
        return "".join(
            f" - {k}: {format_value(self._values[k])}" for k in order_metrics(self._values)
        )

    def _bar_line(self, current: int, now: float, per_step: float, finalize: bool) -> Text:
        text = Text()
        if self.target:
            text.append(self._counter(current), style="bold")
            text.append(" ")
            done = min(int(self.width * current / self.target), self.width)
            text.append(BAR_CHAR * done, style="green")
            text.append(BAR_CHAR * (self.width - done), style="white")
        else:
            text.append(f"{current:>7}/Unknown", style="bold")
        if self.target and not finalize:
            clock = format_eta(per_step * (self.target - current))
        else:
            clock = f"{now - self._start:.0f}s"
        text.append(f" {clock}", style="bold")
        text.append(f" {format_step_time(per_step, self.unit_name)}")
        text.append(self._metrics())
        return text

    def _summary_line(self, current: int, now: float, per_step: float) -> Text:
        counter = self._counter(current) if self.target else f"{current}/Unknown"
        return Text(
            f"{counter} - {now - self._start:.0f}s - "
            f"{format_step_time(per_step, self.unit_name)}{self._metrics()}"
        )
