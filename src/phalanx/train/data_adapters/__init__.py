"""What ``fit``/``evaluate``/``predict`` accept as data: arrays, datasets, iterables, host buffers,
the input checks and the read-ahead of the next epoch (``keras/src/trainers/data_adapters``).
"""

__all__: list[str] = []  # internal to the trainer: fit takes arrays, datasets and iterables
