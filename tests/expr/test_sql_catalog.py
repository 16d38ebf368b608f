"""The catalogue of SQL function names (lancelet.expr.sql.catalog) against
pylance: every name in it is a function pylance's SQL knows, each is implemented or
refused by name, and names pylance does not know stay unknown to lancelet too."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from lancelet.errors import FilterError
from lancelet.expr.functions import registry
from lancelet.expr.sql import catalog
from tests.expr.pylance_sql import Pair, kept, project, write_pair

ALL_NAMES = sorted(catalog.IMPLEMENTED | set(catalog.REFUSED) | set(catalog.NOT_SCALAR))
REFUSED_NAMES = sorted(set(catalog.REFUSED) | set(catalog.NOT_SCALAR))


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Pair:
    table = pa.table({"id": pa.array([1, 2], pa.int64()), "s": ["a", None]})
    return write_pair(table, Path(tmp_path_factory.mktemp("catalog")))


def test_the_catalogue_is_consistent() -> None:
    assert set(registry.FUNCTIONS) == catalog.IMPLEMENTED_HERE
    assert not catalog.IMPLEMENTED & set(catalog.REFUSED)
    assert not catalog.IMPLEMENTED & set(catalog.NOT_SCALAR)
    assert not set(catalog.REFUSED) & set(catalog.NOT_SCALAR)
    assert all(name == name.lower() for name in ALL_NAMES)


@pytest.mark.parametrize("name", ALL_NAMES)
def test_pylance_knows_every_catalogued_name(name: str, pair: Pair) -> None:
    """A name pylance does not know fails with "Invalid function 'name'"; these fail,
    if at all, for their arguments."""
    outcome = kept(pair.theirs, f"{name}(id) IS NULL")
    assert f"Invalid function '{name}'" not in str(outcome.error)


# Names pylance rejects ("Invalid function"), some of them functions of other SQL
# dialects that sqlglot knows.
UNKNOWN = ["xyzfoo", "date_add", "strftime", "ucase", "lcase", "len", "list_min", "char", "typeof"]


@pytest.mark.parametrize("name", UNKNOWN)
def test_names_pylance_does_not_know_stay_unknown(name: str, pair: Pair) -> None:
    sql = f"{name}(id) IS NULL"
    assert f"Invalid function '{name}'" in str(kept(pair.theirs, sql).error)
    error = kept(pair.ours, sql).error
    assert isinstance(error, FilterError)
    assert "unsupported SQL construct" in str(error)
    assert "does not implement SQL function" not in str(error)


# Calls with arguments each function takes, so that the refusal is for the name.
_ARGUMENTS = {
    "overlay": "s placing 'x' from 1",
    "contains_tokens": "s, 'a'",
    "uuid": "",
    "random": "",
    "rand": "",
    "version": "",
    "digest": "s, 'md5'",
}


@pytest.mark.parametrize("name", REFUSED_NAMES)
def test_every_refused_name_is_refused_by_name(name: str, pair: Pair) -> None:
    arguments = _ARGUMENTS.get(name, "s")
    call = f"{name}({arguments})"
    for outcome in (project(pair.ours, call), kept(pair.ours, f"{call} IS NULL")):
        assert isinstance(outcome.error, FilterError), f"{call}: {outcome}"
        assert f"lancelet does not implement SQL function '{name}'" in str(outcome.error)


@pytest.mark.parametrize("name", ["MD5", "Sha256", "RANDOM"])
def test_names_are_matched_ignoring_case(name: str, pair: Pair) -> None:
    arguments = "" if name == "RANDOM" else "s"
    error = project(pair.ours, f"{name}({arguments})").error
    assert f"lancelet does not implement SQL function '{name.lower()}'" in str(error)
