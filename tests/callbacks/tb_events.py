"""Reading TensorBoard event files back, checking their TFRecord framing and CRCs (a test utility)."""

from __future__ import annotations

import glob
import os
import struct

from tensorboardX.proto import event_pb2
from tensorboardX.record_writer import masked_crc32c


def read_events(directory: str) -> list[event_pb2.Event]:
    """Every event of the event files in ``directory``, checking the TFRecord framing and CRCs."""
    events = []
    for path in sorted(glob.glob(os.path.join(directory, "events.out.tfevents.*"))):
        with open(path, "rb") as f:
            data = f.read()
        offset = 0
        while offset < len(data):
            header = data[offset : offset + 8]
            (length,) = struct.unpack("<Q", header)
            (header_crc,) = struct.unpack("<I", data[offset + 8 : offset + 12])
            assert header_crc == masked_crc32c(header), f"{path}: bad length CRC at {offset}"
            record = data[offset + 12 : offset + 12 + length]
            (data_crc,) = struct.unpack("<I", data[offset + 12 + length : offset + 16 + length])
            assert data_crc == masked_crc32c(record), f"{path}: bad data CRC at {offset}"
            events.append(event_pb2.Event.FromString(record))
            offset += 16 + length
    return events


def read_scalars(directory: str) -> dict[str, list[tuple[int, float]]]:
    """``{tag: [(step, value), ...]}`` of the scalars in ``directory``'s event files."""
    scalars: dict[str, list[tuple[int, float]]] = {}
    for event in read_events(directory):
        for value in event.summary.value:
            if value.HasField("simple_value"):
                scalars.setdefault(value.tag, []).append((event.step, value.simple_value))
    return scalars
