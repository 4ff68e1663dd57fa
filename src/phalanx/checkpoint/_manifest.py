"""Manifests: each saved array's name, shape and dtype, compared before any data is read."""

from __future__ import annotations

from ..errors import CheckpointMismatchError


def differences(saved: dict[str, dict], expected: dict[str, dict]) -> list[str]:
    """Lines naming each array whose name, shape or dtype differs between two manifests."""
    lines = []
    for name, want in expected.items():
        got = saved.get(name)
        if got is None:
            lines.append(f"{name}: missing from the checkpoint (model: {_spec(want)})")
        elif (list(got["shape"]), got["dtype"]) != (list(want["shape"]), want["dtype"]):
            lines.append(f"{name}: checkpoint {_spec(got)}, model {_spec(want)}")
    for name, got in saved.items():
        if name not in expected:
            lines.append(f"{name}: in the checkpoint ({_spec(got)}), not in the model")
    return lines


def _spec(entry: dict) -> str:
    return f"shape {tuple(entry['shape'])} {entry['dtype']}"


def check_manifest(what: str, saved: dict[str, dict], expected: dict[str, dict]) -> None:
    """Raises ``CheckpointMismatchError`` naming the arrays that differ (at most 10 lines)."""
    lines = differences(saved, expected)
    if lines:
        shown = "\n  ".join(lines[:10])
        more = f"\n  ... and {len(lines) - 10} more" if len(lines) > 10 else ""
        raise CheckpointMismatchError(
            f"The checkpoint's {what} does not match this {what}: {len(lines)} array(s) "
            f"differ (name, shape, dtype):\n  {shown}{more}\nRestore it into a {what} built "
            "and compiled as the one that was saved (same layers, optimizer and metrics)."
        )
