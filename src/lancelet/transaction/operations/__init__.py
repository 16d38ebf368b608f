"""Transactions and their operations, as immutable values.

Each operation says what a commit changes relative to the version it read.  Every
kind lives in one module of this package, which holds its class, its protobuf codec,
its fold into the manifest, what it claims to change and how it describes itself
(see :mod:`.kind`); :mod:`lancelet.transaction.registry` lists the kinds once, and
the conflict rules between them are the table in :mod:`lancelet.transaction.conflicts`.
Operations lancelet cannot perform but may meet in another writer's transaction file
are kept as :class:`Foreign`.

To add a kind: a module here (class, ``encode``, ``decode``, ``fold``, ``claims``,
``describe`` and its ``KIND``), its class in :data:`Operation` below, its ``KIND`` in
the registry, and its row in the conflict table (whose import checks that every kind
has one).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Union

from lancelet.transaction.map_update import MapUpdate
from lancelet.transaction.operations.append import Append
from lancelet.transaction.operations.create_index import CreateIndex
from lancelet.transaction.operations.data_replacement import DataReplacement
from lancelet.transaction.operations.delete import Delete
from lancelet.transaction.operations.foreign import CloneSource, Foreign
from lancelet.transaction.operations.merge import Merge
from lancelet.transaction.operations.overwrite import Overwrite
from lancelet.transaction.operations.project import Project
from lancelet.transaction.operations.reserve_fragments import ReserveFragments
from lancelet.transaction.operations.restore import Restore
from lancelet.transaction.operations.rewrite import Rewrite, RewriteGroup, RewrittenIndex
from lancelet.transaction.operations.update import InsertedKeys, Update
from lancelet.transaction.operations.update_bases import UpdateBases
from lancelet.transaction.operations.update_config import UpdateConfig

__all__ = [
    "Append",
    "CloneSource",
    "CreateIndex",
    "DataReplacement",
    "Delete",
    "Foreign",
    "InsertedKeys",
    "MapUpdate",
    "Merge",
    "Operation",
    "Overwrite",
    "Project",
    "ReserveFragments",
    "Restore",
    "Rewrite",
    "RewriteGroup",
    "RewrittenIndex",
    "Transaction",
    "Update",
    "UpdateBases",
    "UpdateConfig",
]

Operation = Union[  # noqa: UP007 - a runtime alias
    Append,
    Overwrite,
    Delete,
    Restore,
    ReserveFragments,
    UpdateConfig,
    UpdateBases,
    Project,
    Merge,
    Update,
    Rewrite,
    CreateIndex,
    DataReplacement,
    Foreign,
]


@dataclass(frozen=True)
class Transaction:
    read_version: int
    operation: Operation
    uuid: str = field(default_factory=lambda: str(uuid.uuid4()))
    tag: str = ""
    # The protobuf's ``transaction_properties``: free-form notes committed atomically
    # with the operation (a streaming sink records the batch it committed).
    properties: Mapping[str, str] = field(default_factory=dict, hash=False)
