"""``Dataset.with_options``."""

from __future__ import annotations

from ._dataset import Dataset
from ._options import Options


class OptionsDataset(Dataset):
    """``Dataset.with_options``: the same elements, with options attached."""

    _input_attrs = ("_input",)

    def __init__(self, input_dataset: Dataset, options: Options):
        if not isinstance(options, Options):
            raise TypeError(
                f"with_options expects phalanx.data.Options, got {type(options).__name__}."
            )
        self._input, self._opts = input_dataset, options

    def _options_here(self):
        return self._opts

    def _iterator(self, ctx):
        return self._input._iterator(ctx)

    def _random_access(self):
        return self._input._random_access()

    def _cardinality(self) -> int:
        return self._input._cardinality()

    def _compute_spec(self):
        return self._input.element_spec
