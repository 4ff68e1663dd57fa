"""The old name of ``_index_batches`` (issue 23 PART 2), kept only until
``phalanx.train``'s data adapter imports ``_index_batches``: remove it then."""

from ._index_batches import assemble, index_batches, next_batch, single_base

__all__ = ["assemble", "index_batches", "next_batch", "single_base"]
