"""A trained product-quantization model, saved to and loaded from a Lance file as
pylance's ``lance.indices.PqModel`` is: one column ``codebook`` and the schema
metadata ``num_subvectors`` and ``num_bits``."""

from __future__ import annotations

import pyarrow as pa

from lancelet.errors import CorruptFileError
from lancelet.file import LanceFileReader, LanceFileWriter

_SUB_VECTORS = b"num_subvectors"
_BITS = b"num_bits"


class PqModel:
    """The PQ codebook: ``2**num_bits`` rows, each the code word of that number for
    every sub-vector, side by side (a full-dimension vector)."""

    def __init__(
        self, num_subvectors: int, codebook: pa.FixedSizeListArray, *, num_bits: int = 8
    ) -> None:
        self.num_subvectors = num_subvectors
        self.num_bits = num_bits
        self.codebook = codebook

    @property
    def dimension(self) -> int:
        return int(self.codebook.type.list_size)

    def save(self, uri: str, *, storage_options: dict[str, str] | None = None) -> None:
        """Write the model to the Lance file at ``uri``."""
        metadata = {
            _SUB_VECTORS: str(self.num_subvectors).encode(),
            _BITS: str(self.num_bits).encode(),
        }
        schema = pa.schema([pa.field("codebook", self.codebook.type)], metadata=metadata)
        with LanceFileWriter(uri, schema, storage_options=storage_options) as writer:
            writer.write_batch(pa.table([self.codebook], names=["codebook"]))

    @classmethod
    def load(cls, uri: str, *, storage_options: dict[str, str] | None = None) -> PqModel:
        """Read a model :meth:`save` (or pylance) wrote."""
        reader = LanceFileReader(uri, storage_options=storage_options)
        metadata = reader.metadata().schema.metadata or {}
        try:
            sub_vectors = int(metadata[_SUB_VECTORS].decode())
            bits = int(metadata.get(_BITS, b"8").decode())
        except (KeyError, ValueError) as exc:
            raise CorruptFileError(f"{uri}: a PQ model file names its num_subvectors") from exc
        table = reader.read_all().to_table()
        codebook = table.column("codebook").combine_chunks()
        return cls(sub_vectors, codebook, num_bits=bits)
