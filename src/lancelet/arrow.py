# pyarrow and pandas ship no type information: their extension base classes are Any.
# mypy: disable-error-code="misc,no-any-return,import-untyped,import-not-found"
"""pylance's ``lance.arrow``: the Arrow extension types Lance defines, and ``cast``.

``lance.bfloat16`` stores a brain float as its two little-endian bytes
(``fixed_size_binary(2)``); the image types tag string, binary and fixed-size-list
storage.  lancelet's readers know these types by name (they are not registered with
pyarrow, whose registry is global: pylance registers its own classes there).
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from lancelet._arrow.bf16 import (
    BFloat16,
    BFloat16Array,
    BFloat16Scalar,
    BFloat16Type,
    PandasBFloat16Array,
    PandasBFloat16Type,
    as_bfloat16_array,
    bfloat16_array,
    from_floats,
    is_bfloat16,
)
from lancelet._arrow.images import (
    EncodedImageArray,
    EncodedImageScalar,
    EncodedImageType,
    FixedShapeImageTensorArray,
    FixedShapeImageTensorScalar,
    FixedShapeImageTensorType,
    ImageArray,
    ImageScalar,
    ImageURIArray,
    ImageURIScalar,
    ImageURIType,
)
from lancelet.file.extensions import register_extension

__all__ = [
    "BFloat16",
    "BFloat16Array",
    "BFloat16Scalar",
    "BFloat16Type",
    "EncodedImageArray",
    "EncodedImageScalar",
    "EncodedImageType",
    "FixedShapeImageTensorArray",
    "FixedShapeImageTensorScalar",
    "FixedShapeImageTensorType",
    "ImageArray",
    "ImageScalar",
    "ImageURIArray",
    "ImageURIScalar",
    "ImageURIType",
    "PandasBFloat16Array",
    "PandasBFloat16Type",
    "bfloat16_array",
    "cast",
]


def cast(arr: pa.Array, target_type: pa.DataType | str, *args: Any, **kwargs: Any) -> pa.Array:
    """``pyarrow.compute.cast`` that also casts between floats and ``bfloat16``
    (``"bfloat16"``, ``"bf16"`` or :class:`BFloat16Type`), element-wise or inside
    fixed-size lists of the same size."""
    if isinstance(arr.type, BFloat16Type) or is_bfloat16(arr.type):
        if not isinstance(target_type, pa.DataType) or not pa.types.is_floating(target_type):
            raise ValueError(
                f"Only support casting bfloat16 array to floating array,got: {target_type}"
            )
        return as_bfloat16_array(arr).to_floats().cast(target_type)
    if isinstance(target_type, BFloat16Type) or target_type in ("bfloat16", "bf16"):
        if not pa.types.is_floating(arr.type):
            raise ValueError(
                f"Only support casting floating array to bfloat16 array,got: {arr.type}"
            )
        return from_floats(arr)
    if (
        isinstance(target_type, pa.DataType)
        and pa.types.is_fixed_size_list(arr.type)
        and pa.types.is_fixed_size_list(target_type)
    ):
        if arr.type.list_size != target_type.list_size:
            raise ValueError(
                "Only support casting fixed size list to fixed size list "
                f"with the same size, got: {arr.type} to {target_type}"
            )
        values = cast(arr.values, target_type.value_type)
        return pa.FixedSizeListArray.from_arrays(values, target_type.list_size)
    return pc.cast(arr, target_type, *args, **kwargs)


def _bfloat16_type(storage: pa.DataType, serialized: bytes) -> pa.DataType:
    return BFloat16Type()


# Known to lancelet's readers, not registered with pyarrow: pyarrow's registry is
# global and pylance, when imported too, registers these names with its own classes.
register_extension("lance.bfloat16", _bfloat16_type)
register_extension("lance.arrow.image_uri", ImageURIType.__arrow_ext_deserialize__)
register_extension("lance.arrow.encoded_image", EncodedImageType.__arrow_ext_deserialize__)
register_extension(
    "lance.arrow.fixed_shape_image_tensor", FixedShapeImageTensorType.__arrow_ext_deserialize__
)
