"""Builders of the 2.1 ``CompressiveEncoding`` messages the writer emits."""

from __future__ import annotations

from lancelet._proto import encodings_v2_1_pb2 as pb

_SCHEMES = {
    "lz4": pb.COMPRESSION_ALGORITHM_LZ4,
    "zstd": pb.COMPRESSION_ALGORITHM_ZSTD,
}


def flat(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(flat=pb.Flat(bits_per_value=bits))


def variable(bits_per_offset: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(variable=pb.Variable(offsets=flat(bits_per_offset)))


def inline_bitpacking(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(
        inline_bitpacking=pb.InlineBitpacking(uncompressed_bits_per_value=bits)
    )


def out_of_line_bitpacking(bits: int, compressed_bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(
        out_of_line_bitpacking=pb.OutOfLineBitpacking(
            uncompressed_bits_per_value=bits, values=flat(compressed_bits)
        )
    )


def fixed_size_list(
    dimension: int, has_validity: bool, values: pb.CompressiveEncoding
) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(
        fixed_size_list=pb.FixedSizeList(
            items_per_value=dimension, has_validity=has_validity, values=values
        )
    )


def buffer_compression(scheme: str, level: int | None) -> pb.BufferCompression:
    message = pb.BufferCompression(scheme=_SCHEMES[scheme])
    if level is not None:
        message.level = level
    return message


def general(
    scheme: str, level: int | None, values: pb.CompressiveEncoding
) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(
        general=pb.General(compression=buffer_compression(scheme, level), values=values)
    )


def rle(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(rle=pb.Rle(values=flat(bits), run_lengths=flat(8)))


def byte_stream_split(bits: int) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(byte_stream_split=pb.ByteStreamSplit(values=flat(bits)))


def packed_struct(widths: list[int]) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(
        packed_struct=pb.PackedStruct(bits_per_value=widths, values=flat(sum(widths)))
    )


def variable_packed_struct(
    fields: list[tuple[int, bool]],
) -> pb.CompressiveEncoding:
    """``fields``: per field, (bits per value or per length prefix, variable or not)."""
    message = pb.VariablePackedStruct()
    for bits, is_variable in fields:
        entry = message.fields.add()
        if is_variable:
            entry.value.CopyFrom(variable(bits))
            entry.bits_per_length = bits
        else:
            entry.value.CopyFrom(flat(bits))
            entry.bits_per_value = bits
    return pb.CompressiveEncoding(variable_packed_struct=message)


def fsst(symbol_table: bytes, values: pb.CompressiveEncoding) -> pb.CompressiveEncoding:
    return pb.CompressiveEncoding(fsst=pb.Fsst(symbol_table=symbol_table, values=values))
