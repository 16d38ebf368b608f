"""The safe fix for each finding, worded for the versions it affects.

What is safe depends on where the damage is: a file only old versions use can go
with those versions (``cleanup_old_versions``), while damage in the latest version
calls for a backup or a ``restore`` of the newest version that reads in full.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from lancelet.dataset.doctor.problems import Problem
from lancelet.table import naming

# Damage to a file a fragment needs: repaired by putting a good copy back.
_FRAGMENT_FILES = frozenset(
    {
        "missing-data-file",
        "unreadable-data-file",
        "data-file-mismatch",
        "missing-deletion-file",
        "unreadable-deletion-file",
        "deletion-count-mismatch",
        "bad-row-ids",
        "bad-row-versions",
    }
)
_INDEX_FILES = frozenset(
    {"missing-index-file", "index-file-size-mismatch", "unreadable-index-file"}
)
MANIFEST_DAMAGE = frozenset({"unreadable-manifest", "manifest-version-mismatch"})
HINT = f"{naming.VERSIONS_DIR}/{naming.VERSION_HINT}"


def format_versions(versions: Iterable[int]) -> str:
    """``1-3, 5``: runs of consecutive versions as ranges."""
    runs: list[list[int]] = []
    for version in sorted(set(versions)):
        if runs and version == runs[-1][-1] + 1:
            runs[-1].append(version)
        else:
            runs.append([version])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


@dataclass(frozen=True)
class Context:
    """What a fix depends on besides the finding itself."""

    uri: str
    versions: tuple[int, ...]
    readable: tuple[int, ...]
    tags: dict[str, int]
    # Whether the latest version's own manifest is damaged (a restore cannot run then).
    latest_manifest_damaged: bool = False

    @property
    def latest(self) -> int | None:
        return self.versions[-1] if self.versions else None

    def last_readable(self, below: int | None = None) -> int | None:
        found = [v for v in self.readable if below is None or v < below]
        return found[-1] if found else None

    def restore(self) -> str:
        """How to make the newest sound version the latest again."""
        good = self.last_readable()
        if good is None:
            return (
                "No version on disk reads in full, so only a backup of the damaged "
                "files can repair the dataset."
            )
        return (
            f"Restore the newest version that reads in full, {good}: "
            f"`lancelet.dataset({self.uri!r}, version={good}).restore()` commits it again as "
            "the latest version (the damaged versions stay in the history until "
            "cleanup_old_versions removes them)."
        )

    def drop_old(self, versions: tuple[int, ...]) -> str:
        """How to remove old versions with their damage (never the latest)."""
        newest = max(versions)
        keep = sum(1 for v in self.versions if v > newest)
        tagged = sorted(name for name, v in self.tags.items() if v in versions)
        text = (
            f"The latest version does not need it. If you no longer need version(s) "
            f"{format_versions(versions)}, `ds.cleanup_old_versions(retain_versions={keep})` "
            f"removes them and every version before them, keeping the newest {keep}."
        )
        if tagged:
            names = ", ".join(repr(name) for name in tagged)
            text += f" Cleanup keeps tagged versions: delete the tags {names} first."
        return text


def fix_for(problem: Problem, versions: tuple[int, ...], context: Context) -> str:
    """The safe fix for ``problem`` seen in ``versions``."""
    code = problem.code
    in_latest = context.latest in versions
    if code in _FRAGMENT_FILES:
        first = "Put a good copy of the file back from a backup if you have one: that repairs "
        first += "every version that uses it."
        then = context.restore() if in_latest else context.drop_old(versions)
        return f"{first} Without one: {_lower_first(then)}"
    if code in _INDEX_FILES:
        if not in_latest:
            return context.drop_old(versions)
        return (
            "Drop the index and build it again on the latest version: "
            "`ds.drop_index(name)`, then create it as before. Until then, queries that "
            "use it fail."
        )
    if code == "row-id-counter-behind":
        return _counter_fix(versions, context)
    if code in MANIFEST_DAMAGE:
        return _manifest_fix(problem, versions, context)
    return _FIXES[code](problem, context)


def _counter_fix(versions: tuple[int, ...], context: Context) -> str:
    if context.latest not in versions:
        return context.drop_old(versions)
    return "Reads are correct, but do not write to the dataset until this is fixed: " + (
        _lower_first(context.restore())
    )


def _lower_first(sentence: str) -> str:
    """``sentence`` continuing another: its first letter in lower case."""
    return sentence[:1].lower() + sentence[1:]


def _manifest_fix(problem: Problem, versions: tuple[int, ...], context: Context) -> str:
    keep = f"Move {problem.path} out of _versions/ (keep a copy to look at): "
    if context.latest in versions:
        good = context.last_readable(below=context.latest)
        after = (
            f"version {good} is then the latest again, and the next commit follows it. "
            f"Delete {HINT} too: it still names the moved version."
            if good is not None
            else "no other version reads in full, so restore the files from a backup."
        )
        return keep + after
    return keep + (
        "nothing can read that version anyway, and cleanup_old_versions refuses to run "
        "while a manifest does not decode. Files only it used then show as orphaned."
    )


def _tag_name(problem: Problem) -> str:
    name = (problem.path or "").rsplit("/", 1)[-1]
    return name.removesuffix(".json")


def _missing_manifest(problem: Problem, context: Context) -> str:
    return (
        "Put the lost manifest files back into _versions/ from a backup if you have "
        f"them. Otherwise the dataset stays at version {context.latest}; files only the "
        "lost versions used show as orphaned files, which cleanup_old_versions removes. "
        f"If you moved them aside on purpose, delete {HINT}."
    )


def _fix_no_dataset(problem: Problem, context: Context) -> str:
    return (
        "Check the path (and storage options). If the dataset was here, its _versions/ "
        "directory is gone: only a backup of it can bring the dataset back."
    )


def _fix_unsupported(problem: Problem, context: Context) -> str:
    return (
        "Nothing is known to be wrong: check this version with pylance, or a lancelet "
        "release that reads it."
    )


def _fix_dangling_tag(problem: Problem, context: Context) -> str:
    tag = _tag_name(problem)
    return (
        f"Delete the tag (`ds.tags.delete({tag!r})`) or point it at a version on disk "
        f"(`ds.tags.update({tag!r}, {context.latest})`)."
    )


def _fix_unreadable_tag(problem: Problem, context: Context) -> str:
    tag = _tag_name(problem)
    return (
        f"Delete the file {problem.path} by hand, then create the tag again "
        f"(`ds.tags.create({tag!r}, version)`)."
    )


def _fix_transaction(problem: Problem, context: Context) -> str:
    return (
        "No repair is needed: reads and new commits work. Find out what removed or "
        "changed the file; a hand-made cleanup may have touched more."
    )


def _fix_orphan(problem: Problem, context: Context) -> str:
    count = len(context.versions)
    return (
        f"`ds.cleanup_old_versions(retain_versions={count}, delete_unverified=True)` "
        "removes files no version uses and keeps every version; pass "
        "delete_unverified=True only when no write is in progress, as an unfinished "
        "write's files look the same. Without it, cleanup removes them once they are "
        "7 days old."
    )


def _fix_latest(problem: Problem, context: Context) -> str:
    if context.latest_manifest_damaged:
        return "Move the damaged manifest aside, as its own finding says."
    return context.restore()


_FIXES = {
    "no-dataset": _fix_no_dataset,
    "missing-manifest": _missing_manifest,
    "unsupported-version": _fix_unsupported,
    "dangling-tag": _fix_dangling_tag,
    "unreadable-tag": _fix_unreadable_tag,
    "missing-transaction-file": _fix_transaction,
    "unreadable-transaction-file": _fix_transaction,
    "orphaned-file": _fix_orphan,
    "latest-version-broken": _fix_latest,
}
