# pyarrow and pandas ship no type information: their extension base classes are Any.
# mypy: disable-error-code="misc,no-any-return,import-untyped,import-not-found"
"""Lance's image extension types: URIs (strings), encoded images (binaries) and
pixel tensors (fixed-size lists), with their arrays."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse
from urllib.request import urlopen

import numpy as np
import pyarrow as pa
from pyarrow import fs

_STRING = pa.string()
_BINARY = pa.binary()


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
