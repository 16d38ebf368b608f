"""Training a product quantizer's codebook and encoding vectors with it, as pylance
14 builds IVF_PQ (see ``docs/vector-index-format.md``, "Building IVF_PQ").

The vectors given are what PQ encodes: residuals from the partition centroid for
l2 and cosine, the vectors themselves for dot.  Each of the ``M`` sub-vectors (the
dimension split into ``M`` equal runs) gets its own 256 code words, trained by l2
k-means on ``sample_rate * 256`` rows drawn at random (all when there are no more:
:func:`training_rows`); a vector's code for a sub-vector is its nearest code word by l2 (for
every metric: pylance trains and encodes PQ by l2).
"""

from __future__ import annotations

import numpy as np

from lancelet.errors import ArgumentError
from lancelet.index.vector import kmeans

# 8-bit codes by default; 4-bit codes (16 code words) are built on request.
NUM_BITS = 8
CODE_WORDS = 1 << NUM_BITS
WIDTHS = (4, 8)
# Vectors encoded per block: bounds the (block, 256) distance temporaries.
_BLOCK_ROWS = 1 << 15


def training_rows(rows: int, sample_rate: int, rng: np.random.Generator) -> np.ndarray:
    """Positions of the ``sample_rate * 256`` rows the codebook is trained on."""
    return kmeans.sample_rows(rows, sample_rate * CODE_WORDS, rng)


def train_codebook(
    vectors: np.ndarray,
    num_sub_vectors: int,
    max_iterations: int,
    rng: np.random.Generator,
    num_bits: int = NUM_BITS,
) -> np.ndarray:
    """The (num_sub_vectors, 2**num_bits, dimension / num_sub_vectors) float32
    codebook trained on ``vectors`` ((n, dimension) float32, n >= 256: the
    training rows)."""
    rows, dimension = vectors.shape
    if dimension % num_sub_vectors:
        raise ArgumentError(
            f"dimension ({dimension}) must be divisible by num_sub_vectors ({num_sub_vectors})"
        )
    if rows < CODE_WORDS:
        raise ArgumentError(
            f"Not enough rows to train PQ. Requires {CODE_WORDS} rows but only {rows} available"
        )
    width = dimension // num_sub_vectors
    words = 1 << num_bits
    codebook = np.empty((num_sub_vectors, words, width), dtype=np.float32)
    for sub in range(num_sub_vectors):  # one k-means per sub-vector
        part = np.ascontiguousarray(vectors[:, sub * width : (sub + 1) * width])
        # Random starts: their codebooks' error equalled pylance's on a Gaussian
        # mixture, and k-means++ seeding would cost 256 steps per sub-vector.
        trained = kmeans.train(part, words, kmeans.L2, max_iterations, rng, plus_plus=False)
        codebook[sub] = trained.centroids
    return codebook


def encode(vectors: np.ndarray, codebook: np.ndarray) -> np.ndarray:
    """The (n, num_sub_vectors) uint8 codes of ``vectors``: each sub-vector's
    nearest code word by l2 (one code per byte, whatever the code width)."""
    num_sub_vectors, _, width = codebook.shape
    codes = np.empty((len(vectors), num_sub_vectors), dtype=np.uint8)
    for sub in range(num_sub_vectors):  # one step per sub-vector
        part = vectors[:, sub * width : (sub + 1) * width]
        codes[:, sub] = kmeans.assign(part, codebook[sub], kmeans.L2)
    return codes


def encode_residuals(
    vectors: np.ndarray,
    partitions: np.ndarray,
    centroids: np.ndarray,
    codebook: np.ndarray,
    residual: bool,
) -> np.ndarray:
    """The codes of each vector's residual from its partition's centroid (or of the
    vector itself when not ``residual``), a block of rows at a time so that no
    residual copy of the whole column is held."""
    codes = np.empty((len(vectors), codebook.shape[0]), dtype=np.uint8)
    for start in range(0, len(vectors), _BLOCK_ROWS):  # one step per block
        block = vectors[start : start + _BLOCK_ROWS]
        if residual:
            block = block - centroids[partitions[start : start + len(block)]]
        codes[start : start + len(block)] = encode(block, codebook)
    return codes


def residuals(vectors: np.ndarray, partitions: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """``vectors`` less the centroid of their partition (float32)."""
    out: np.ndarray = (vectors - centroids[partitions]).astype(np.float32, copy=False)
    return out


def pack_nibbles(codes: np.ndarray) -> np.ndarray:
    """(n, M) 4-bit codes as (n, M / 2) bytes: sub-vector 2j low, 2j + 1 high."""
    return np.asarray(codes[:, 0::2] | (codes[:, 1::2] << 4), dtype=np.uint8)


def unpack_nibbles(packed: np.ndarray) -> np.ndarray:
    """The inverse of :func:`pack_nibbles`."""
    codes = np.empty((len(packed), 2 * packed.shape[1]), dtype=np.uint8)
    codes[:, 0::2] = packed & 0x0F
    codes[:, 1::2] = packed >> 4
    return codes
