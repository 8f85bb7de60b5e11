"""Protocol files: any bytes, and any value for any key, give a checked protocol or one message."""

import dataclasses
import tempfile
import typing
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.study.protocol import Protocol, load_protocol
from tests.helpers import ROOT, reads_or_refuses, table_bytes

LITERALS = ["1", "0", "-1", "2.5", "1e309", "-inf", "nan", "true", "false", '"x"', '""',
            '"escape"', '"p"', '"1"', "[]", "[1, 2]", '["1", "2", "3"]', "[50.0, 250.0]",
            "[1920, 1080]", "[-1.0, -1.0, -1.0]", "{a = 1}", "1979-05-27"]  # fmt: skip


def _keys(cls, prefix=""):
    """Every (table, key) of the protocol, from its dataclasses."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if dataclasses.is_dataclass(hints[field.name]):
            yield from ((field.name, key) for _, key in _keys(hints[field.name]))
        else:
            yield (prefix, field.name)


KEYS = sorted(set(_keys(Protocol)))


@settings(max_examples=150, deadline=3000)
@given(
    settings_=st.dictionaries(st.sampled_from(KEYS), st.sampled_from(LITERALS), max_size=6),
    unknown=st.sampled_from(["", "stimulus = 2\n", "[timing]\nstimuls_s = 2\n", "[extra]\n"]),
)
def test_any_value_for_any_key(settings_, unknown):
    tables: dict[str, list[str]] = {}
    for (table, key), value in settings_.items():
        tables.setdefault(table, []).append(f"{key} = {value}")
    text = "\n".join(tables.pop("", [])) + "\n"
    text += "".join(f"[{table}]\n" + "\n".join(lines) + "\n" for table, lines in tables.items())
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_text(text + unknown)
        protocol = reads_or_refuses(load_protocol, path)
    if protocol is not None:
        assert protocol.timing.stimulus_s > 0 and protocol.timing.blank_s > 0
        assert len(set(protocol.response.keys)) == len(protocol.response.keys)


@settings(max_examples=100, deadline=3000)
@given(content=table_bytes(["[timing]", "stimulus_s", "=", "2.0", "[response]", "keys"],
                           separators=(" ", "")))  # fmt: skip
def test_any_bytes_as_a_protocol(content):
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.toml"
        path.write_bytes(content)
        reads_or_refuses(load_protocol, path)


def test_the_shipped_protocols_load():
    for path in sorted((ROOT / "protocols").glob("*.toml")):
        assert load_protocol(path).name
