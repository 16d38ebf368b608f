"""A trained IVF model (centroids and the distance they were trained for), saved
to and loaded from a Lance file as pylance's ``lance.indices.IvfModel`` is: one
column ``centroids`` and the schema metadata ``distance_type``."""

from __future__ import annotations

import pyarrow as pa

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader, LanceFileWriter

_DISTANCE_TYPE = b"distance_type"


class IvfModel:
    """The centroids of the IVF partitions and the distance type they serve."""

    def __init__(self, centroids: pa.Array, distance_type: str) -> None:
        self.centroids = centroids
        self.distance_type = distance_type

    @property
    def num_partitions(self) -> int:
        return len(self.centroids)

    def save(self, uri: str, *, storage_options: dict[str, str] | None = None) -> None:
        """Write the model to the Lance file at ``uri``."""
        schema = pa.schema(
            [pa.field("centroids", self.centroids.type)],
            metadata={_DISTANCE_TYPE: self.distance_type.encode()},
        )
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.centroids], names=["centroids"]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict[str, str] | None = None) -> IvfModel:
        """Read a model :meth:`save` (or pylance) wrote."""
        reader = LanceFileReader(uri, storage_options=storage_options)
        metadata = reader.metadata().schema.metadata or {}
        if _DISTANCE_TYPE not in metadata:
            raise CorruptFileError(f"{uri}: an IVF model file names its distance_type")
        table = reader.read_all().to_table()
        return cls(table.column("centroids").combine_chunks(), metadata[_DISTANCE_TYPE].decode())
