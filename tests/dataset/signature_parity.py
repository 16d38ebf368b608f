"""Compares lancelet's public API surface with pylance's: for every public function and
class both export from the same module, the positional parameter names and their order,
the keyword names, the defaults, how each method is bound (instance, class, static,
property) and the attribute names of result types (dataclass fields, ``TypedDict``
keys, properties).

``differences()`` lists each mismatch as a ``Difference``; ``tests/dataset/
test_signatures.py`` asserts that the list is exactly its allow-list. Run this module
(``python -m tests.dataset.signature_parity``) to print the differences."""

from __future__ import annotations

import dataclasses
import enum
import importlib
import inspect
import typing
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any, NamedTuple

# The pylance modules whose public names lancelet mirrors, by the same module path
# under ``lancelet`` (``lance.dataset`` is ``lancelet.dataset``, and so on).
MODULES = (
    "lance",
    "lance._arrow.bf16",
    "lance._datagen",
    "lance._dataset.sharded_batch_iterator",
    "lance.arrow",
    "lance.blob",
    "lance.commit",
    "lance.dataset",
    "lance.debug",
    "lance.file",
    "lance.fragment",
    "lance.indices",
    "lance.io",
    "lance.lance",
    "lance.log",
    "lance.namespace",
    "lance.optimize",
    "lance.progress",
    "lance.query",
    "lance.sampler",
    "lance.schema",
    "lance.tracing",
    "lance.udf",
    "lance.util",
)

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_EMPTY = inspect.Parameter.empty


class Difference(NamedTuple):
    """One way lancelet's surface differs from pylance's.

    ``where`` names the function, method or class (``lance.dataset.LanceDataset.
    to_table``); ``kind`` is one of ``positional`` (the positional names differ; detail
    is pylance's list, then lancelet's), ``keyword`` (a name pylance accepts that
    lancelet does not; detail is the name), ``default`` (detail is the name), ``binding``
    (a method is bound differently; detail is pylance's binding, then lancelet's),
    ``varargs`` (pylance takes ``*args`` or ``**kwargs`` and lancelet does not),
    ``attribute`` (an attribute of pylance's class that lancelet's lacks; detail is the
    name) or ``member`` (a public method or property pylance's class has that lancelet's
    lacks; detail is the name)."""

    where: str
    kind: str
    detail: str


def _import(name: str) -> ModuleType | None:
    try:
        return importlib.import_module(name)
    except ImportError:
        return None


def _own_public_names(module: ModuleType) -> Iterator[str]:
    """The public names of ``module`` that are pylance's (not re-exported typing or
    pyarrow names)."""
    for name in sorted(vars(module)):
        value = vars(module)[name]
        if name.startswith("_") or inspect.ismodule(value):
            continue
        owner = getattr(value, "__module__", None) or ""
        if owner == "lance" or owner.startswith("lance."):
            yield name


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _is_factory(value: Any) -> bool:
    return repr(value) == "<factory>"  # a dataclass field's default_factory


def _same_default(a: Any, b: Any) -> bool:
    """Whether lancelet's default ``b`` serves where pylance's is ``a``: any default
    does where pylance requires the argument; a dataclass field's factory (pylance's
    empty lists) matches a factory or an empty value."""
    if a is _EMPTY:
        return True
    if b is _EMPTY:
        return False
    if _is_factory(a) or _is_factory(b):
        other = b if _is_factory(a) else a
        return _is_factory(other) or other in ((), [], {})
    if isinstance(a, enum.Enum) or isinstance(b, enum.Enum):
        return str(getattr(a, "value", a)) == str(getattr(b, "value", b))
    if callable(a) or callable(b):
        return True  # sentinels and factories: compared by behaviour, not identity
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:
        return False


def compare_signatures(
    where: str, a: Callable[..., Any], b: Callable[..., Any]
) -> list[Difference]:
    """The differences between pylance's callable ``a`` and lancelet's ``b``."""
    sig_a, sig_b = _signature(a), _signature(b)
    if sig_a is None or sig_b is None:
        return []
    params_a = list(sig_a.parameters.values())
    params_b = {p.name: p for p in sig_b.parameters.values()}
    kinds_b = {p.kind for p in params_b.values()}
    out: list[Difference] = []
    pos_a = [p.name for p in params_a if p.kind in _POSITIONAL]
    pos_b = [p.name for p in params_b.values() if p.kind in _POSITIONAL]
    if pos_a != pos_b[: len(pos_a)] and not (
        inspect.Parameter.VAR_POSITIONAL in kinds_b and pos_b == pos_a[: len(pos_b)]
    ):
        out.append(Difference(where, "positional", f"{pos_a} vs {pos_b}"))
    for p in params_a:
        if p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            if p.kind not in kinds_b:
                out.append(Difference(where, "varargs", p.kind.name))
            continue
        q = params_b.get(p.name)
        if q is None:
            out.append(Difference(where, "keyword", p.name))
        elif not _same_default(p.default, q.default):
            out.append(Difference(where, "default", p.name))
    return out


def _binding(cls: type, name: str) -> str:
    for klass in cls.__mro__:
        if name in vars(klass):
            raw = vars(klass)[name]
            break
    else:
        return "instance-attribute"
    if isinstance(raw, classmethod) or type(raw).__name__ == "classmethod_descriptor":
        return "classmethod"
    if isinstance(raw, staticmethod):
        return "staticmethod"
    if isinstance(raw, property) or inspect.isgetsetdescriptor(raw):
        return "property"
    if inspect.ismemberdescriptor(raw):
        return "property"
    if callable(raw):
        return "class" if inspect.isclass(raw) else "method"
    return "value"


def _same_binding(a: str, b: str) -> bool:
    """Bindings a caller cannot tell apart: a value read from the class or through a
    property of the instance."""
    return {a, b} == {"property", "value"} or (a, b) == ("value", "instance-attribute")


def _typed_dict_keys(cls: type) -> set[str] | None:
    if typing.is_typeddict(cls):
        return set(cls.__required_keys__) | set(cls.__optional_keys__)
    return None


def _attributes(cls: type) -> set[str]:
    """The attribute names an instance of ``cls`` has that the class may not show:
    dataclass fields, ``NamedTuple`` fields, slots and annotations."""
    names: set[str] = set()
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls)}
    names |= set(getattr(cls, "_fields", ()))
    for klass in cls.__mro__:
        names |= set(getattr(klass, "__slots__", ()))
        names |= set(vars(klass).get("__annotations__", {}))
    return names


def compare_classes(where: str, a: type, b: type) -> list[Difference]:
    """The differences between pylance's class ``a`` and lancelet's ``b``."""
    keys_a = _typed_dict_keys(a)
    if keys_a is not None:
        keys_b = _typed_dict_keys(b) or _attributes(b)
        return [Difference(where, "attribute", k) for k in sorted(keys_a - keys_b)]
    out: list[Difference] = []
    if issubclass(a, enum.Enum):
        if not (inspect.isclass(b) and issubclass(b, enum.Enum)):
            return [Difference(where, "binding", "enum vs not an enum")]
        members_b = set(b.__members__)
        return [Difference(where, "member", m) for m in a.__members__ if m not in members_b]
    if "__init__" in _own_dict_names(a) or "__new__" in _own_dict_names(a):
        out += compare_signatures(f"{where}.__init__", a, b)
    attrs_a, attrs_b = _attributes(a), _attributes(b)
    for name in sorted(attrs_a):
        public = not name.startswith("_")
        if public and name not in attrs_b and not hasattr(b, name):
            out.append(Difference(where, "attribute", name))
    for name in sorted(dir(a)):
        if name.startswith("_") or name in attrs_a:
            continue
        binding_a = _binding(a, name)
        if not hasattr(b, name):
            if name not in attrs_b:
                out.append(Difference(where, "member", name))
            continue
        binding_b = _binding(b, name)
        member_a, member_b = getattr(a, name), getattr(b, name)
        if binding_a == "class" and inspect.isclass(member_b):
            out += compare_classes(f"{where}.{name}", member_a, member_b)
            continue
        if binding_a != binding_b and not _same_binding(binding_a, binding_b):
            out.append(Difference(f"{where}.{name}", "binding", f"{binding_a} vs {binding_b}"))
            continue
        if binding_a in ("method", "classmethod", "staticmethod"):
            out += compare_signatures(f"{where}.{name}", member_a, member_b)
    return out


def _own_dict_names(cls: type) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            break
        names |= set(vars(klass))
    return names


def _pairs() -> dict[int, tuple[str, Any, Any]]:
    """Each pylance object once (named by the module that defines it when it is
    exported from several), with lancelet's object of the same module and name."""
    pairs: dict[int, tuple[str, Any, Any]] = {}
    for module_name in MODULES:
        pylance_module = _import(module_name)
        lancelet_module = _import("lancelet" + module_name[len("lance") :])
        if pylance_module is None or lancelet_module is None:
            continue
        for name in _own_public_names(pylance_module):
            b = getattr(lancelet_module, name, None)
            if b is None:
                continue
            a = getattr(pylance_module, name)
            home = getattr(a, "__module__", None) == module_name
            if id(a) not in pairs or home:
                pairs[id(a)] = (f"{module_name}.{name}", a, b)
    return pairs


def differences() -> list[Difference]:
    """Every difference between pylance's surface and lancelet's, in a stable order."""
    out: list[Difference] = []
    for where, a, b in _pairs().values():
        if inspect.isclass(a):
            out += compare_classes(where, a, b) if inspect.isclass(b) else []
        elif callable(a):
            out += compare_signatures(where, a, b)
    return sorted(set(out))


if __name__ == "__main__":
    for difference in differences():
        print(*difference, sep="  |  ")
