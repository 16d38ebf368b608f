"""Changes to a string map (config, schema, field or table metadata), as an
``UpdateConfig`` carries them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class MapUpdate:
    """Changes to a string map: ``None`` as a value removes the key; ``replace``
    drops every key not named first."""

    entries: Mapping[str, str | None] = field(default_factory=dict)
    replace: bool = False

    def applied_to(self, current: Mapping[str, str]) -> dict[str, str]:
        out = {} if self.replace else dict(current)
        for key, value in self.entries.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = value
        return out
