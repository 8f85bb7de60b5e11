"""A protocol's problems, each as one line naming the setting and what it takes.

A setting's ``Annotated`` type says what it takes (:class:`Expects`, in the words of
``protocols/README.md``); a table's validator refuses in its own words (:func:`refusal`).
:func:`refusal_line` words pydantic's first error as ``<key>: expected ..., got ...``.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Mapping

from pydantic.dataclasses import is_pydantic_dataclass
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError

from sbir_study.foundation.checks import did_you_mean

__all__ = ["Expects", "refusal", "refusal_line"]


@dataclasses.dataclass(frozen=True)
class Expects:
    """What a setting takes, as its refusal says it, kept in its ``Annotated`` type."""

    text: str


def refusal(message: str, *, field: str | None = None) -> PydanticCustomError:
    """A refusal worded in full; ``field`` names the setting when a table's validator raises it
    (pydantic places that error at the table).
    """
    context = {"message": message} | ({"field": field} if field else {})
    return PydanticCustomError("protocol_setting", "{message}", context)


# A value of the wrong type is named where it is (a list item by its index), by its type.
_TYPES = {
    "float_type": "a number",
    "int_type": "a whole number",
    "bool_type": "true or false",
    "string_type": "a string",
    "tuple_type": "a list",
}


def refusal_line(error: Mapping, raw: dict, root: type) -> str:
    """``<key>: expected ..., got ...`` (or ``unknown key ...``) for one of pydantic's ``errors()``;
    ``raw`` is the TOML as read, ``root`` the table it is validated as.
    """
    loc, kind = error["loc"], error["type"]
    where = _dotted(loc)
    item = _item_table(root, loc)
    if item is not None:
        return _item_refusal(error, where, item)
    if kind == "unexpected_keyword_argument":
        return _unknown_key(root, loc)
    if kind == "dataclass_type":
        return f"{where}: expected a table [{where}], got {error['input']!r}"
    if kind in _TYPES:
        return f"{where}: expected {_TYPES[kind]}, got {error['input']!r}"
    if kind == "protocol_setting":
        field = error["ctx"].get("field")
        where = ".".join(part for part in (where, field) if part)
        return f"{where}: {error['ctx']['message']}"
    # A value the setting does not take: the setting's own words, with its whole value.
    names, info = _setting(root, loc)
    if info is None:  # the top level of a TOML document is always a table of settings
        return f"expected a table of settings ({error['msg']})"
    value = raw
    for name in names:
        value = value[name]
    return f"{'.'.join(names)}: expected {_expects(info) or error['msg']}, got {value!r}"


def _fields(table: object) -> dict[str, FieldInfo]:
    """The settings of a table (a pydantic dataclass); none of anything else."""
    if isinstance(table, type) and is_pydantic_dataclass(table):
        return table.__pydantic_fields__
    return {}


def _setting(root: type, loc: tuple) -> tuple[tuple[str, ...], FieldInfo | None]:
    """The setting an error's location lies in (without a list item's index), and its field."""
    names: list[str] = []
    table: object = root
    info = None
    for part in loc:
        found = _fields(table).get(part) if isinstance(part, str) else None
        if found is None:
            break
        names.append(part)
        table, info = found.annotation, found
    return tuple(names), info


def _expects(info: FieldInfo | None) -> str | None:
    metadata = info.metadata if info is not None else ()
    return next((item.text for item in metadata if isinstance(item, Expects)), None)


def _item_table(root: type, loc: tuple) -> type | None:
    """The table of a list of tables (``[[catch]]``) when ``loc`` lies inside one item."""
    if len(loc) < 3 or not isinstance(loc[1], int) or loc[0] not in _fields(root):
        return None
    args = typing.get_args(_fields(root)[loc[0]].annotation)
    return args[0] if args and _fields(args[0]) else None


def _item_refusal(error: Mapping, where: str, item: type) -> str:
    """A refusal inside one table of a list, named by its index (``catch[0].ratings``)."""
    key, fields = error["loc"][2], _fields(item)
    table = where.rsplit(".", 1)[0]
    if error["type"] == "unexpected_keyword_argument":
        return f"{table}: unknown key {key!r}; expected {', '.join(fields)}"
    if error["type"] == "missing":
        return f"{table}: missing key {key!r}; expected {', '.join(fields)}"
    return f"{where}: expected {_expects(fields.get(key)) or error['msg']}, got {error['input']!r}"


def _dotted(loc: tuple) -> str:
    return "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)[1:]


def _unknown_key(root: type, loc: tuple) -> str:
    *table, key = loc
    prefix = "".join(f"{name}." for name in table)
    _, info = _setting(root, tuple(table))
    names = list(_fields(info.annotation if info is not None else root))
    message = f"unknown key {prefix + key!r}"
    hint = did_you_mean(key, names, prefix=prefix)
    if hint:
        return message + hint
    return message + f"; expected one of {', '.join(prefix + name for name in names)}"
