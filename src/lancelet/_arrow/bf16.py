# pyarrow and pandas ship no type information: their extension base classes are Any.
# mypy: disable-error-code="misc,no-any-return,import-untyped,import-not-found"
"""``lance.bfloat16``: brain floats stored as two little-endian bytes
(``fixed_size_binary(2)``), with their Arrow array and scalar and a pandas dtype."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa

from lancelet._arrow.bf16_bits import bits_to_float32, float_to_bits, format_bfloat16


class BFloat16:
    """One brain-float value (8 exponent bits, 7 mantissa bits)."""

    __slots__ = ("_bits",)
    __hash__ = None  # type: ignore[assignment]  # pylance's value is unhashable too

    def __init__(self, value: float) -> None:
        self._bits = int(float_to_bits(np.array([value], dtype=np.float64))[0])

    @classmethod
    def from_bytes(cls, bytes: bytes) -> BFloat16:  # pylance's name
        """The value stored as ``bytes``: two little-endian bytes."""
        if len(bytes) != 2:
            raise ValueError(f"a bfloat16 is 2 bytes, got {len(bytes)}")
        out = cls.__new__(cls)
        out._bits = int.from_bytes(bytes, "little")
        return out

    def as_float(self) -> float:
        return float(bits_to_float32(np.array([self._bits], dtype=np.uint16))[0])

    def _compare(self, other: object) -> tuple[float, float]:
        if not isinstance(other, BFloat16):
            raise TypeError(f"cannot compare a BFloat16 with {type(other).__name__}")
        return self.as_float(), other.as_float()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BFloat16) and self.as_float() == other.as_float()

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __lt__(self, other: BFloat16) -> bool:
        a, b = self._compare(other)
        return a < b

    def __le__(self, other: BFloat16) -> bool:
        a, b = self._compare(other)
        return a <= b

    def __gt__(self, other: BFloat16) -> bool:
        a, b = self._compare(other)
        return a > b

    def __ge__(self, other: BFloat16) -> bool:
        a, b = self._compare(other)
        return a >= b

    def __str__(self) -> str:
        return format_bfloat16(self._bits)

    __repr__ = __str__


class BFloat16Type(pa.ExtensionType):
    def __init__(self) -> None:
        super().__init__(pa.binary(2), "lance.bfloat16")

    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Any:
        return BFloat16Type()

    def __arrow_ext_class__(self) -> type:
        return BFloat16Array

    def __arrow_ext_scalar_class__(self) -> type:
        return BFloat16Scalar

    def to_pandas_dtype(self) -> Any:
        return PandasBFloat16Type()

    def __hash__(self) -> int:
        # pyarrow's Python extension types are unhashable; lancelet keeps types in sets.
        return hash((self.extension_name, self.storage_type))


class BFloat16Array(pa.ExtensionArray):
    """An array of ``lance.bfloat16`` values."""

    def __repr__(self) -> str:
        return f"<lance.arrow.BFloat16Array object at 0x{id(self):016x}>\n{self}"

    def __str__(self) -> str:
        def lines(part: Any) -> str:
            return ",\n".join(f"  {v}" for v in part)

        if len(self) < 22:
            return f"[\n{lines(self)}\n]"
        return f"[\n{lines(self[:10])},\n...\n{lines(self[-10:])}\n]"

    def _bits(self) -> np.ndarray:
        storage = self.storage
        data = storage.buffers()[1]
        if data is None:
            return np.zeros(len(storage), dtype=np.uint16)
        words = np.frombuffer(data, dtype="<u2")
        return words[storage.offset : storage.offset + len(storage)]

    def to_numpy(self, zero_copy_only: bool = False) -> np.ndarray:
        """The values as an ``ml_dtypes.bfloat16`` NumPy array (no nulls allowed)."""
        if self.null_count > 0:
            raise ValueError("Cannot convert null values to numpy")
        try:
            from ml_dtypes import bfloat16
        except ImportError as exc:
            raise ImportError("BFloat16Array.to_numpy needs the ml_dtypes package") from exc
        return self._bits().view(bfloat16)

    def to_floats(self) -> pa.FloatArray:
        """The values widened (exactly) to float32, nulls kept."""
        floats = bits_to_float32(self._bits())
        return pa.array(floats, mask=self.storage.is_null().to_numpy(zero_copy_only=False))

    @classmethod
    def from_numpy(cls, array: np.ndarray) -> BFloat16Array:
        """A :class:`BFloat16Array` of a one-dimensional ``ml_dtypes.bfloat16`` array."""
        if array.dtype.name != "bfloat16" or array.dtype.itemsize != 2:
            raise ValueError("Cannot convert non-bfloat16 values to BFloat16Array")
        if array.ndim != 1:
            raise ValueError("Cannot convert multi-dimensional array to BFloat16Array")
        return _from_bits(np.ascontiguousarray(array).view(np.uint16), None)


def _from_bits(bits: np.ndarray, nulls: np.ndarray | None) -> BFloat16Array:
    data = pa.py_buffer(bits.astype("<u2", copy=False).tobytes())
    validity = None
    if nulls is not None and nulls.any():
        validity = pa.array(~nulls).buffers()[1]
    storage = pa.Array.from_buffers(pa.binary(2), len(bits), [validity, data])
    out = pa.ExtensionArray.from_storage(BFloat16Type(), storage)
    return out


class BFloat16Scalar(pa.ExtensionScalar):
    def as_py(self, **kwargs: Any) -> BFloat16 | None:
        raw = self.value
        return None if raw is None else BFloat16.from_bytes(raw.as_py())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, BFloat16Scalar):
            other = other.as_py()
        elif getattr(getattr(other, "dtype", None), "name", None) == "bfloat16":
            numpy_scalar: Any = other
            other = BFloat16.from_bytes(numpy_scalar.tobytes())
        return isinstance(other, BFloat16) and self.as_py() == other

    __hash__ = None  # type: ignore[assignment]


def bfloat16_array(values: Sequence[float | None]) -> BFloat16Array:
    """A :class:`BFloat16Array` of Python numbers, ``None`` for null."""
    if not isinstance(values, Sequence) or isinstance(values, (str, bytes)):
        raise TypeError(f"values must be a sequence of numbers, not {type(values).__name__}")
    floats = pa.array(values, type=pa.float64())
    return from_floats(floats)


def from_floats(floats: pa.Array) -> BFloat16Array:
    nulls = floats.is_null().to_numpy(zero_copy_only=False)
    wide = floats.fill_null(0).cast(pa.float64()).to_numpy(zero_copy_only=False)
    return _from_bits(float_to_bits(wide), nulls if floats.null_count else None)


def is_bfloat16(dtype: pa.DataType) -> bool:
    return isinstance(dtype, pa.ExtensionType) and dtype.extension_name == "lance.bfloat16"


def as_bfloat16_array(arr: pa.Array) -> BFloat16Array:
    if isinstance(arr, BFloat16Array):
        return arr
    # The same extension registered by another library: rewrap its storage.
    return pa.ExtensionArray.from_storage(BFloat16Type(), arr.storage)


try:
    from pandas.api.extensions import (
        ExtensionArray as _PandasExtensionArray,
    )
    from pandas.api.extensions import (
        ExtensionDtype as _PandasExtensionDtype,
    )
    from pandas.api.extensions import (
        register_extension_dtype as _register_pandas_dtype,
    )
except ImportError:  # pandas is optional

    class PandasBFloat16Type:
        def __init__(self) -> None:
            raise ImportError("the lance.bfloat16 pandas dtype needs pandas")

    class PandasBFloat16Array:
        def __init__(self, data: Any) -> None:
            raise ImportError("PandasBFloat16Array needs pandas")

else:

    @_register_pandas_dtype
    class PandasBFloat16Type(_PandasExtensionDtype):  # type: ignore[no-redef]
        kind = "f"
        na_value = None
        name = "lance.bfloat16"
        names = None
        type = BFloat16
        _is_numeric = True

        def __from_arrow__(self, array: pa.Array | pa.ChunkedArray) -> PandasBFloat16Array:
            return PandasBFloat16Array(array)

        @classmethod
        def construct_array_type(cls) -> Any:
            return PandasBFloat16Array

        @classmethod
        def construct_from_string(cls, string: str) -> PandasBFloat16Type:
            if string == "lance.bfloat16":
                return cls()
            raise TypeError(f"Cannot construct a '{cls.__name__}' from '{string}'")

    class PandasBFloat16Array(_PandasExtensionArray):  # type: ignore[no-redef]
        """A pandas extension array over a :class:`BFloat16Array`."""

        dtype = PandasBFloat16Type()

        def __init__(self, data: Any) -> None:
            if isinstance(data, pa.ChunkedArray):
                data = pa.concat_arrays(data.chunks) if data.num_chunks else bfloat16_array([])
            self.data = data

        @classmethod
        def _from_sequence(
            cls, scalars: Any, *, dtype: Any = None, copy: bool = False
        ) -> PandasBFloat16Array:
            if isinstance(scalars, PandasBFloat16Array):
                wrapped: Any = scalars
                return cls(wrapped.data)
            floats = [None if v is None else _as_float(v) for v in scalars]
            return cls(bfloat16_array(floats))

        def __getitem__(self, item: Any) -> Any:
            if isinstance(item, (int, np.integer)):
                return self.data[int(item)].as_py()
            if isinstance(item, slice):
                return PandasBFloat16Array(self.data[item])
            if isinstance(item, np.ndarray) and item.dtype == np.bool_:
                return PandasBFloat16Array(self.data.filter(pa.array(item)))
            if isinstance(item, np.ndarray) and np.issubdtype(item.dtype, np.integer):
                return PandasBFloat16Array(self.data.take(pa.array(item)))
            raise NotImplementedError(f"indexing with {type(item).__name__}")

        def __len__(self) -> int:
            return len(self.data)

        def isna(self) -> np.ndarray:
            return self.data.is_null().to_numpy(zero_copy_only=False)

        def to_numpy(self, *args: Any, **kwargs: Any) -> np.ndarray:
            return self.data.to_numpy()

        def __arrow_array__(self, type: Any = None) -> pa.Array:
            return self.data

        def copy(self) -> PandasBFloat16Array:
            return PandasBFloat16Array(self.data)

        @property
        def nbytes(self) -> int:
            return int(self.data.nbytes)

        @classmethod
        def from_numpy(cls, array: np.ndarray) -> PandasBFloat16Array:
            return cls(BFloat16Array.from_numpy(array))


def _as_float(value: Any) -> float:
    return value.as_float() if isinstance(value, BFloat16) else float(value)
