"""Type aliases of the numpy arrays passed between layers (matching, metrics, scoring).

numpy's typing cannot say how many dimensions an array has, so ``Matrix`` in a name is the
promise of two (retrieved x ground truth), ``Array`` of any.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["BoolArray", "BoolMatrix", "FloatArray", "FloatMatrix", "IntArray"]

BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

BoolMatrix = BoolArray
FloatMatrix = FloatArray
