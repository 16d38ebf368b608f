# pyarrow and pandas ship no type information: their extension base classes are Any.
# mypy: disable-error-code="misc,no-any-return,import-untyped,import-not-found"
"""pylance's ``lance.arrow``: the Arrow extension types Lance defines, and ``cast``.

``lance.bfloat16`` stores a brain float as its two little-endian bytes
(``fixed_size_binary(2)``); the image types tag string, binary and fixed-size-list
storage.  The types are registered with pyarrow when lancelet is imported, so a
column of one of them read from a dataset or IPC stream comes back as the type.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from lancelet._bfloat16 import bits_to_float32, float_to_bits, format_bfloat16
from lancelet.file.extensions import register_extension

__all__ = [
    "BFloat16",
    "BFloat16Array",
    "BFloat16Type",
    "EncodedImageArray",
    "EncodedImageType",
    "FixedShapeImageTensorArray",
    "FixedShapeImageTensorType",
    "ImageArray",
    "ImageScalar",
    "ImageURIArray",
    "ImageURIType",
    "PandasBFloat16Array",
    "bfloat16_array",
    "cast",
]


_STRING = pa.string()
_BINARY = pa.binary()


class BFloat16:
    """One brain-float value (8 exponent bits, 7 mantissa bits)."""

    __slots__ = ("_bits",)
    __hash__ = None  # type: ignore[assignment]  # pylance's value is unhashable too

    def __init__(self, value: float) -> None:
        self._bits = int(float_to_bits(np.array([value], dtype=np.float64))[0])

    @classmethod
    def from_bytes(cls, data: bytes) -> BFloat16:
        """The value stored as ``data``: two little-endian bytes."""
        if len(data) != 2:
            raise ValueError(f"a bfloat16 is 2 bytes, got {len(data)}")
        out = cls.__new__(cls)
        out._bits = int.from_bytes(data, "little")
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
    return _from_floats(floats)


def _from_floats(floats: pa.Array) -> BFloat16Array:
    nulls = floats.is_null().to_numpy(zero_copy_only=False)
    wide = floats.fill_null(0).cast(pa.float64()).to_numpy(zero_copy_only=False)
    return _from_bits(float_to_bits(wide), nulls if floats.null_count else None)


def cast(arr: pa.Array, target_type: pa.DataType | str, *args: Any, **kwargs: Any) -> pa.Array:
    """``pyarrow.compute.cast`` that also casts between floats and ``bfloat16``
    (``"bfloat16"``, ``"bf16"`` or :class:`BFloat16Type`), element-wise or inside
    fixed-size lists of the same size."""
    if isinstance(arr.type, BFloat16Type) or _is_bfloat16(arr.type):
        if not isinstance(target_type, pa.DataType) or not pa.types.is_floating(target_type):
            raise ValueError(
                f"Only support casting bfloat16 array to floating array,got: {target_type}"
            )
        return _as_bfloat16_array(arr).to_floats().cast(target_type)
    if isinstance(target_type, BFloat16Type) or target_type in ("bfloat16", "bf16"):
        if not pa.types.is_floating(arr.type):
            raise ValueError(
                f"Only support casting floating array to bfloat16 array,got: {arr.type}"
            )
        return _from_floats(arr)
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


def _is_bfloat16(dtype: pa.DataType) -> bool:
    return isinstance(dtype, pa.ExtensionType) and dtype.extension_name == "lance.bfloat16"


def _as_bfloat16_array(arr: pa.Array) -> BFloat16Array:
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


# --- images ---------------------------------------------------------------------


def _storage_must_be(
    storage_type: pa.DataType, kinds: tuple[Callable[..., bool], ...], what: str
) -> None:
    if not any(kind(storage_type) for kind in kinds):
        raise ValueError(f"storage_type must be a {what} type")


class _LanceImageType(pa.ExtensionType):
    def __arrow_ext_serialize__(self) -> bytes:
        return b""

    def __hash__(self) -> int:
        return hash((self.extension_name, self.storage_type, self.__arrow_ext_serialize__()))

    def __reduce__(self) -> Any:
        return type(self).__arrow_ext_deserialize__, (
            self.storage_type,
            self.__arrow_ext_serialize__(),
        )


class ImageURIType(_LanceImageType):
    def __init__(self, storage_type: pa.DataType = _STRING) -> None:
        _storage_must_be(storage_type, (pa.types.is_string, pa.types.is_large_string), "string")
        super().__init__(storage_type, "lance.arrow.image_uri")

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Any:
        return ImageURIType(storage_type)

    def __arrow_ext_class__(self) -> type:
        return ImageURIArray

    def __arrow_ext_scalar_class__(self) -> type:
        return ImageURIScalar


class EncodedImageType(_LanceImageType):
    def __init__(self, storage_type: pa.DataType = _BINARY) -> None:
        _storage_must_be(storage_type, (pa.types.is_binary, pa.types.is_large_binary), "binary")
        super().__init__(storage_type, "lance.arrow.encoded_image")

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Any:
        return EncodedImageType(storage_type)

    def __arrow_ext_class__(self) -> type:
        return EncodedImageArray

    def __arrow_ext_scalar_class__(self) -> type:
        return EncodedImageScalar


class FixedShapeImageTensorType(_LanceImageType):
    """Images as fixed-size lists of pixel values, with the image shape."""

    def __init__(self, arrow_type: pa.DataType, shape: Sequence[int]) -> None:
        if len(shape) == 0:
            raise ValueError("an image tensor needs a shape of at least one dimension")
        self.shape = shape
        self.arrow_type = arrow_type
        super().__init__(
            pa.list_(arrow_type, int(np.prod(shape))), "lance.arrow.fixed_shape_image_tensor"
        )

    def __arrow_ext_serialize__(self) -> bytes:
        return json.dumps({"shape": list(self.shape)}).encode()

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type: pa.DataType, serialized: bytes) -> Any:
        shape = json.loads(serialized.decode())["shape"]
        return FixedShapeImageTensorType(storage_type.value_type, shape)

    def __arrow_ext_class__(self) -> type:
        return FixedShapeImageTensorArray

    def __arrow_ext_scalar_class__(self) -> type:
        return FixedShapeImageTensorScalar


class ImageArray(pa.ExtensionArray):
    def __repr__(self) -> str:
        return (
            f"<lance.arrow.{type(self).__name__} object at 0x{id(self):016x}>\n{self.to_pylist()!r}"
        )

    @classmethod
    def from_array(cls, images: Any) -> ImageArray:
        """The image array of ``images``: strings are URIs, binaries encoded images,
        fixed-shape tensors pixels; a Python iterable is taken as URIs."""
        if isinstance(images, ImageArray):
            return images
        if isinstance(images, (pa.StringArray, pa.LargeStringArray)):
            return _wrap(ImageURIType(images.type), images)
        if isinstance(images, (pa.BinaryArray, pa.LargeBinaryArray)):
            return _wrap(EncodedImageType(images.type), images)
        if isinstance(images, pa.FixedShapeTensorArray):
            typ = FixedShapeImageTensorType(images.type.value_type, images.type.shape)
            return _wrap(typ, images.storage)
        if isinstance(images, Iterable) and not isinstance(images, (str, bytes, pa.Array)):
            return _wrap(ImageURIType(), pa.array(images, type=pa.string()))
        raise TypeError(f"Cannot build a ImageArray from {type(images)}")


def _wrap(typ: pa.ExtensionType, storage: pa.Array) -> Any:
    return pa.ExtensionArray.from_storage(typ, storage)


class ImageURIArray(ImageArray):
    """Image URIs: local paths or ``file://``, ``s3://``, ``gs://``, ``http(s)://`` URIs."""

    @classmethod
    def from_uris(cls, uris: pa.StringArray | pa.LargeStringArray | Iterable[str | Path]) -> Any:
        if isinstance(uris, (pa.StringArray, pa.LargeStringArray)):
            storage: pa.Array = uris
        elif isinstance(uris, Iterable) and not isinstance(uris, (str, bytes)):
            storage = pa.array([str(uri) for uri in uris], type=pa.string())
        else:
            raise TypeError(f"Cannot build a ImageURIArray from {type(uris)}")
        return _wrap(ImageURIType(storage.type), storage)

    def read_uris(self, storage_type: pa.DataType = _BINARY) -> EncodedImageArray:
        """Read each image's bytes into an :class:`EncodedImageArray`."""
        images = [None if uri is None else _read_uri(uri) for uri in self.storage.to_pylist()]
        return _wrap(EncodedImageType(storage_type), pa.array(images, type=storage_type))


def _read_uri(uri: str) -> bytes:
    from urllib.parse import urlparse
    from urllib.request import urlopen

    from pyarrow import fs

    if urlparse(uri).scheme in ("http", "https"):
        with urlopen(uri) as response:
            return bytes(response.read())
    filesystem, path = fs.FileSystem.from_uri(uri)
    with filesystem.open_input_stream(path) as stream:
        return bytes(stream.read())


def _pillow() -> Any:
    try:
        from PIL import Image
    except ImportError:
        return None
    return Image


class EncodedImageArray(ImageArray):
    """Encoded images (PNG, JPEG, ...), as their files' bytes."""

    def __repr__(self) -> str:
        image = _pillow()
        decoded = None
        if image is not None:
            import io

            decoded = "\n[" + repr(image.open(io.BytesIO(self[0].as_py()))) + ", ..]"
        return (
            f"<lance.arrow.{type(self).__name__} object at 0x{id(self):016x}>{decoded}\n"
            f"{self.to_pylist()[0][:30]!r}"
        )

    def to_tensor(self, decoder: Callable[[pa.Array], Any] | None = None) -> Any:
        """Decode the images into a :class:`FixedShapeImageTensorArray` (with pillow
        unless ``decoder`` maps the binary storage to an ``(n, *shape)`` ndarray)."""
        if decoder is None:
            image = _pillow()
            if image is None:
                raise ValueError(
                    "No image decoder available. Please install pillow or pass a decoder argument."
                )

            def decoder(images: pa.Array) -> np.ndarray:
                import io

                return np.stack([np.asarray(image.open(io.BytesIO(b))) for b in images.to_pylist()])

        pixels = decoder(self.storage)
        if isinstance(pixels, pa.FixedShapeTensorArray):
            value_type, shape, storage = pixels.type.value_type, pixels.type.shape, pixels.storage
        else:
            tensors = pa.FixedShapeTensorArray.from_numpy_ndarray(pixels)
            value_type, shape = pa.from_numpy_dtype(pixels.dtype), pixels.shape[1:]
            storage = tensors.storage
        return _wrap(FixedShapeImageTensorType(value_type, shape), storage)


class FixedShapeImageTensorArray(ImageArray):
    """Images as pixel tensors of one shape."""

    def to_numpy(self, zero_copy_only: bool = True, writable: bool = False) -> np.ndarray:
        tensor = pa.fixed_shape_tensor(self.storage.type.value_type, self.type.shape)
        return _wrap(tensor, self.storage).to_numpy_ndarray()

    def to_encoded(
        self,
        encoder: Callable[[np.ndarray], pa.Array] | None = None,
        storage_type: pa.DataType = _BINARY,
    ) -> EncodedImageArray:
        """Encode the images (as PNG with pillow unless ``encoder`` is given)."""
        if encoder is None:
            image = _pillow()
            if image is None:
                raise ValueError(
                    "No image encoder available. Please install pillow or pass an encoder argument."
                )

            def encoder(pixels: np.ndarray) -> pa.Array:
                import io

                out = []
                for one in pixels:
                    with io.BytesIO() as buf:
                        image.fromarray(one).save(buf, format="PNG")
                        out.append(buf.getvalue())
                return pa.array(out, type=storage_type)

        return _wrap(EncodedImageType(storage_type), encoder(self.to_numpy()))


class ImageScalar(pa.ExtensionScalar):
    def as_py(self, **kwargs: Any) -> Any:
        return self.value.as_py(**kwargs)


class ImageURIScalar(ImageScalar):
    pass


class EncodedImageScalar(ImageScalar):
    pass


class FixedShapeImageTensorScalar(ImageScalar):
    pass


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
