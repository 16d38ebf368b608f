"""The Fragment Reuse Index of a version: read, applied, extended and trimmed.

A compaction with ``defer_index_remap`` leaves the BTREE, BITMAP and LABEL_LIST
segments that list rows by address as they were and records its moves as a new
reuse version (:func:`extended`); searches map those segments' addresses and
coverage forward (:func:`reuse_map`).  Zone maps and Bloom filters stop claiming
the rewritten fragments instead, as without deferral: pylance answers from their
stale zones.  A version no segment depends on any more is dropped by
:func:`trimmed` (``cleanup_frag_reuse_index`` commits it; ``optimize_indices`` leaves
the reuse index as it is, as pylance's does).
"""

from __future__ import annotations

import time
import uuid as uuid_lib
from dataclasses import replace

import numpy as np
import pyarrow as pa
from pyroaring import FrozenBitMap

from lancelet.errors import CorruptIndexError
from lancelet.index.frag_reuse import ReuseMap
from lancelet.table import frag_reuse, naming, row_address
from lancelet.table.frag_reuse import ReuseDetails, ReuseVersion
from lancelet.table.fragment import ExternalFile
from lancelet.table.index import FRAG_REUSE_INDEX, IndexFile, IndexMetadata
from lancelet.table.manifest import Manifest
from lancelet.transaction.store import DatasetStore


def reuse_index(manifest: Manifest) -> IndexMetadata | None:
    found = [i for i in manifest.indices if i.name == FRAG_REUSE_INDEX]
    if len(found) > 1:
        raise CorruptIndexError(f"version {manifest.version}: two fragment reuse indices")
    return found[0] if found else None


def read_details(store: DatasetStore, index: IndexMetadata) -> ReuseDetails:
    """The reuse versions of ``index``, from the manifest or its details file."""
    where = f"{store.root}: fragment reuse index {index.uuid}"
    if index.index_details is None:
        raise CorruptIndexError(f"{where}: it has no details")
    content = frag_reuse.read_content(index.index_details, where)
    if isinstance(content, ReuseDetails):
        return content
    path = store.path(naming.INDICES_DIR, str(index.uuid), content.path)
    try:
        data = store.io.read_bytes(path)
    except OSError as exc:
        raise CorruptIndexError(f"{path}: cannot read the reuse details: {exc}") from exc
    end = content.offset + content.size
    if end > len(data):
        raise CorruptIndexError(f"{path}: holds {len(data)} bytes, the manifest says {end}")
    return ReuseDetails.from_bytes(data[content.offset : end], path)


def reuse_map(store: DatasetStore, manifest: Manifest) -> ReuseMap | None:
    """The version's reuse map (None: no reuse index), kept by the store per uuid."""
    index = reuse_index(manifest)
    if index is None:
        return None
    cache: dict[uuid_lib.UUID, ReuseMap] = store.cache("frag_reuse")
    found = cache.get(index.uuid)
    if found is None:
        found = cache[index.uuid] = ReuseMap(read_details(store, index))
    return found


def applies_to(index: IndexMetadata, manifest: Manifest) -> bool:
    """Whether reuse versions map this segment's rows (else it is uncovered)."""
    return index.mapped_by_reuse(manifest.stable_row_ids)


def coverage(
    reuse: ReuseMap | None, index: IndexMetadata, manifest: Manifest
) -> FrozenBitMap | None:
    """The fragments a segment holds now: its bitmap carried through the reuse
    versions when they map its rows."""
    bitmap = index.fragment_bitmap
    if reuse is None or bitmap is None or not applies_to(index, manifest):
        return bitmap
    return reuse.coverage(bitmap)


def _listed_coverage(
    reuse: ReuseMap | None, index: IndexMetadata, manifest: Manifest
) -> FrozenBitMap | None:
    if index.name == FRAG_REUSE_INDEX and index.fragment_bitmap is not None:
        # The new fragments of its versions that are still there, as pylance lists.
        return index.fragment_bitmap & FrozenBitMap(f.id for f in manifest.fragments)
    return coverage(reuse, index, manifest)


def with_coverage(store: DatasetStore, manifest: Manifest) -> Manifest:
    """``manifest`` with each segment's bitmap as the reuse index carries it, for
    describing indices as pylance does; never to be committed."""
    reuse = reuse_map(store, manifest)
    if reuse is None:
        return manifest
    indices = tuple(
        replace(i, fragment_bitmap=_listed_coverage(reuse, i, manifest)) for i in manifest.indices
    )
    return replace(manifest, indices=indices)


# -- recording a deferred compaction -------------------------------------------------


def needs_version(manifest: Manifest, reuse: ReuseMap | None, old_ids: set[int]) -> bool:
    """Whether any segment a deferred compaction leaves as it is holds a rewritten
    fragment (else a version would record moves nobody reads)."""
    for index in manifest.indices:
        if index.left_to_reuse(manifest.stable_row_ids):
            held = coverage(reuse, index, manifest)
            if held is None or not held.isdisjoint(FrozenBitMap(old_ids)):
                return True
    return False


def extended(store: DatasetStore, manifest: Manifest, version: ReuseVersion) -> IndexMetadata:
    """A new reuse index: ``manifest``'s versions and ``version``, its details file
    written if they are too large to go inline."""
    current = reuse_index(manifest)
    previous = read_details(store, current).versions if current is not None else ()
    return _reuse_metadata(store, manifest, ReuseDetails((*previous, version)), current)


def _reuse_metadata(
    store: DatasetStore,
    manifest: Manifest,
    details: ReuseDetails,
    current: IndexMetadata | None,
) -> IndexMetadata:
    new_id = uuid_lib.uuid4()
    data = details.to_bytes()
    content: ReuseDetails | ExternalFile = details
    files: tuple[IndexFile, ...] = ()
    if len(data) > frag_reuse.INLINE_LIMIT:
        store.io.put(store.path(naming.INDICES_DIR, str(new_id), frag_reuse.DETAILS_FILE), data)
        content = ExternalFile(frag_reuse.DETAILS_FILE, 0, len(data))
        files = (IndexFile(frag_reuse.DETAILS_FILE, len(data)),)
    new_fragments = FrozenBitMap(f for v in details.versions for f in v.new_ids)
    return IndexMetadata(
        uuid=new_id,
        fields=(),
        name=FRAG_REUSE_INDEX,
        dataset_version=manifest.version,
        fragment_bitmap=new_fragments,
        index_details=frag_reuse.index_details(content),
        index_version=current.index_version if current is not None else 0,
        created_at=int(time.time() * 1000),
        files=files,
    )


# -- trimming --------------------------------------------------------------------------


def trimmed(store: DatasetStore, manifest: Manifest) -> IndexMetadata | None:
    """The reuse index after dropping the versions no segment depends on (None: no
    version is left); ``manifest``'s own index when every version is needed."""
    current = reuse_index(manifest)
    reuse = reuse_map(store, manifest)
    if current is None or reuse is None:
        return None
    needed: set[int] = set()
    for index in manifest.indices:
        if applies_to(index, manifest):
            if index.fragment_bitmap is None:
                return current  # a segment of unknown coverage may need any version
            needed |= reuse.needed(index.fragment_bitmap)
    versions = reuse.details.versions
    if len(needed) == len(versions):
        return current
    if not needed:
        return None
    kept = ReuseDetails(tuple(v for i, v in enumerate(versions) if i in needed))
    index = _reuse_metadata(store, manifest, kept, current)
    return replace(index, dataset_version=current.dataset_version)


def remap_row_addrs(
    store: DatasetStore, manifest: Manifest, addresses: pa.Array
) -> pa.Array | None:
    """Row addresses carried across the compactions the reuse index records: null
    where a compaction dropped the row or its fragment is gone; None without one."""
    reuse = reuse_map(store, manifest)
    if reuse is None:
        return None
    values = addresses.cast(pa.uint64())
    raw = values.fill_null(0).to_numpy(zero_copy_only=False)
    mapped, alive = reuse.remap(raw)
    present = np.array(sorted(f.id for f in manifest.fragments), dtype=np.uint64)
    alive &= np.isin(row_address.fragment_ids(mapped), present)
    valid = alive & ~np.asarray(values.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    return pa.array(mapped, pa.uint64(), mask=~valid)
