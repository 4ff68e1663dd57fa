"""Reading a ``.keras`` zip as untrusted input: bounded inflate, bounded JSON.

A ``.keras`` file is a zip anyone may hand over. Each member is inflated as a stream and
refused once it passes a cap (a 2 MB zip can declare, or hide, a 2 GiB ``config.json``),
and ``config.json`` is parsed only up to `MAX_CONFIG_DEPTH` levels of nesting (what
reads a config later recurses through it). Every refusal is a `KerasFileError`
naming the file and the member.
"""

from __future__ import annotations

import json
import zipfile
from typing import Any

from ..errors import KerasFileError

#: ``config.json`` larger than this is refused (Keras's own configs are kilobytes).
MAX_CONFIG_BYTES = 64 * 2**20
#: Lists and dicts nested deeper than this in ``config.json`` are refused.
MAX_CONFIG_DEPTH = 200
_CHUNK = 2**20


def read_member(archive: zipfile.ZipFile, member: str, where: str, cap: int) -> bytes:
    """The bytes of ``member``, inflated chunk by chunk and refused past ``cap`` bytes."""
    try:
        info = archive.getinfo(member)
    except KeyError:
        raise KerasFileError(
            f"{where!r} has no {member!r}: not a Keras 3 .keras file (a zip with config.json "
            "and model.weights.h5)."
        ) from None
    if info.file_size > cap:
        raise KerasFileError(_too_large(where, member, info.file_size, cap))
    chunks, total = [], 0
    try:
        with archive.open(info) as stream:
            while chunk := stream.read(_CHUNK):
                total += len(chunk)
                if total > cap:  # the declared size lied
                    raise KerasFileError(_too_large(where, member, total, cap))
                chunks.append(chunk)
    except (zipfile.BadZipFile, NotImplementedError, OSError, EOFError) as error:
        raise KerasFileError(f"{where!r}: its {member!r} is damaged ({error}).") from None
    return b"".join(chunks)


def _too_large(where: str, member: str, size: int, cap: int) -> str:
    return (
        f"{where!r}: its {member!r} inflates to more than {cap} bytes (at least {size}); "
        "refusing to read it. A Keras file this large was not written by Keras or phalanx."
    )


def parse_config(data: bytes, where: str) -> dict:
    """``config.json``'s object, nested at most `MAX_CONFIG_DEPTH` deep."""
    try:
        config = json.loads(data)
    except RecursionError:
        raise KerasFileError(f"{where!r}: its config.json nests too deep to read.") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise KerasFileError(f"{where!r}: its config.json is not JSON ({error}).") from None
    if depth(config) > MAX_CONFIG_DEPTH:
        raise KerasFileError(
            f"{where!r}: its config.json nests deeper than {MAX_CONFIG_DEPTH} levels; no "
            "model's configuration does."
        )
    if not isinstance(config, dict):
        raise KerasFileError(
            f"{where!r}: its config.json holds a {type(config).__name__}, expected an object "
            'with "class_name" and "config".'
        )
    return config


def depth(value: Any) -> int:
    """How deep lists and dicts nest in ``value``, counted without recursion."""
    deepest, todo = 0, [(value, 1)]
    while todo:
        value, level = todo.pop()
        if isinstance(value, dict | list):
            deepest = max(deepest, level)
            if level <= MAX_CONFIG_DEPTH:
                items = value.values() if isinstance(value, dict) else value
                todo.extend((v, level + 1) for v in items)
    return deepest
