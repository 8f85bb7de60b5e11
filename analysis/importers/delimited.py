"""A source file read as text cells: its encoding decoded, its separator sniffed.

Every importer reads through :func:`read_delimited`, whose cells come from the
toolkit's one table reader (:mod:`sbir_study.foundation.tables`), each row with its line.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from sbir_study.foundation.checks import InputError
from sbir_study.foundation.tables import COLON, TextFile, read_header, read_rows

__all__ = [
    "SEPARATORS",
    "SourceTable",
    "decode_text",
    "parse_delimited",
    "read_delimited",
    "sniff_separator",
]

#: The separators :func:`sniff_separator` tells apart, in the order a tie is refused in.
SEPARATORS = (",", ";", "\t", "|")
_SEPARATOR_NAMES = {",": "comma", ";": "semicolon", "\t": "tab", "|": "vertical bar"}
#: Lines the sniffer looks at below the header.
_SNIFFED_LINES = 50
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


@dataclass(frozen=True)
class SourceTable:
    """A source file as text cells: ``sep`` (``""`` for JSON), ``frame``, ``lines`` (header: 1)."""

    path: str
    sha256: str
    encoding: str
    sep: str
    names: tuple[str, ...]
    frame: pd.DataFrame
    lines: np.ndarray


def decode_text(path: str | Path, encoding: str | None = None) -> tuple[str, str, str]:
    """The text of a file, its SHA-256 and the encoding it was read in.

    A byte-order mark decides (UTF-8, -16, -32) and is dropped; else UTF-8 or
    ``encoding`` (any :mod:`codecs` name). A byte not of the encoding is refused naming
    its line.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "r.csv"
    >>> _ = path.write_bytes("Teilnehmer;Bewertung\\r\\nJürgen;3\\r\\n".encode("utf-16"))
    >>> text, sha256, used = decode_text(path)
    >>> text.splitlines()[1], used
    ('Jürgen;3', 'utf-16')
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a text file")
    try:
        data = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    sha256 = hashlib.sha256(data).hexdigest()
    used = next((name for bom, name in _BOMS if data.startswith(bom)), None)
    if used is None:
        used = encoding or "utf-8"
        try:
            codecs.lookup(used)
        except LookupError:
            raise InputError(
                f"--encoding: {used!r} is not an encoding Python knows; expected "
                "a name such as utf-8, cp1252, latin-1 or utf-16"
            ) from None
    try:
        text = data.decode(used)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        hint = "" if encoding else "; name its encoding with --encoding (cp1252, latin-1, ...)"
        raise InputError(
            f"{path}: line {line}: byte 0x{data[error.start]:02x} is not {used}{hint}"
        ) from None
    return text.removeprefix("\ufeff"), sha256, used


def sniff_separator(
    lines: Sequence[str], expected: Sequence[str] = (), *, what: str = "table"
) -> str:
    """The field separator of a table, from its header and first lines.

    A candidate (:data:`SEPARATORS`) fits when it splits the header into two names or
    more, every line into as many fields (quotes honoured), and finds the ``expected``
    names. Not exactly one fitting is refused (pass ``--sep``): a guess could shift
    every cell.

    Examples
    --------
    >>> sniff_separator(["Subject;Sketch;Image;Response;RT", "P-7;s1;a.png;3;0,734"])
    ';'
    >>> sniff_separator(['"","participant","rating"', '"1","01",NA'])
    ','
    """
    lines = [line for line in lines if line.strip()][: _SNIFFED_LINES + 1]
    if not lines:
        raise InputError(f"{what}: line 1: empty; expected a header line")
    fitting = []
    for sep in SEPARATORS:
        rows = list(csv.reader(lines, delimiter=sep))
        header = [name.strip() for name in rows[0]]
        if len(header) < 2 or any(len(row) != len(header) for row in rows[1:]):
            continue
        if any(
            name not in header and name.lower() not in {h.lower() for h in header}
            for name in expected
        ):
            continue
        fitting.append(sep)
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        raise InputError(
            f"{what}: cannot tell the separator (none of comma, semicolon, tab, "
            "vertical bar splits every line alike); pass --sep"
        )
    names = " and ".join(_SEPARATOR_NAMES[s] for s in fitting)
    raise InputError(f"{what}: the separator could be {names}; pass --sep")


def read_delimited(
    path: Path, *, sep: str | None, encoding: str | None, expected: Sequence[str] = ()
) -> SourceTable:
    """A delimited file's cells as text; ``sep`` None sniffs it (:func:`sniff_separator`)."""
    text, sha256, used = decode_text(path, encoding)
    return parse_delimited(path, text, sha256, used, sep=sep, expected=expected)


def parse_delimited(
    path: Path,
    text: str,
    sha256: str,
    used: str,
    *,
    sep: str | None,
    expected: Sequence[str] = (),
) -> SourceTable:
    """A delimited file's cells as text, from its text as :func:`decode_text` gave it
    (``used`` the encoding it was read in)."""
    if not text.strip():
        raise InputError(f"{path}: line 1: empty; expected a header line and one row per pair")
    if sep is None:
        sep = sniff_separator(text.splitlines()[: _SNIFFED_LINES + 1], expected, what=str(path))
    data = text.encode("utf-8")
    # The toolkit's reader takes UTF-8: it gets the decoded text, and names the source file.
    file = TextFile(
        Path(path),
        sha256,
        _count_lines(text),
        len(data),
        COLON,
        complete=text.endswith(("\n", "\r")),
        _data=data,
    )
    header = read_header(file, sep, quote=True)
    rows = read_rows([(file, header)], categorical=False)
    frame = rows.frame.astype(object)
    return SourceTable(str(path), sha256, used, sep, header.names, frame, rows.lines)


def _count_lines(text: str) -> int:
    """Lines as an editor shows them (LF, CR LF and a lone CR each end one)."""
    ends = text.count("\n") + text.count("\r") - text.count("\r\n")
    return ends + (not text.endswith(("\n", "\r")) and bool(text))
