"""What every job of the engine shares: the snapshot view of a version
(:mod:`.snapshot`), argument checks at the API boundary, the refusal of options
lancelet does not implement, and write progress callbacks."""
