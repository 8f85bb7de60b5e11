"""A text file as the table reader takes it: its bytes, checked as UTF-8, its SHA-256 and
its lines.

The rules (``docs/formats.md``): UTF-8, with or without a byte-order mark; a line ends
with LF, CR LF or a lone CR, and lines are counted as an editor shows them; a file that
is not UTF-8 is refused on the line of its first bad byte. How a message names a line,
and how it words a problem, is the caller's (:class:`Wording`).
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from .checks import InputError
from .provenance import file_digest

__all__ = ["COLON", "COMMA", "TextFile", "Wording", "read_text"]

_NOT_BLANK = re.compile(rb"[^ \t\r\n\x0b\x0c]")
_BLANK_LINE = re.compile(rb"[ \t\x0b\x0c]*(?:\r\n|\r|\n)")
_LINE_END = re.compile(rb"\r\n|\r|\n")
_UTF8_SLICE = 1 << 22


@dataclass(frozen=True)
class Wording:
    """How a caller's messages name a line, and how they word the reader's problems.

    ``line(path, number)`` names line ``number`` of file ``path``; the other
    fields are the message texts (``str.format`` templates) that follow it.

    Examples
    --------
    >>> COMMA.at("run.txt", 3)
    'run.txt, line 3'
    >>> COLON.field_count.format(expected=4, found=5)
    'expected 4 fields, found 5'
    """

    line: Callable[[str, int], str]
    #: A row with another number of fields than the header.
    field_count: str = "expected {expected} fields, found {found}"
    #: A byte that is not UTF-8 (``byte``, an int).
    not_utf8: str = "not UTF-8 (byte 0x{byte:02x}); expected a UTF-8 text file"
    #: A column named twice in the header.
    twice: str = "column {name!r} appears twice"
    #: A cell of a number column that is not a number.
    number: str = "{column}: got {text!r}; expected a number"

    def at(self, path: str | Path, number: int) -> str:
        """The name of line ``number`` of ``path``."""
        return self.line(str(path), int(number))


#: ``path: line N``, as ratings tables, manifests and anchors name a line.
COLON = Wording(lambda path, number: f"{path}: line {number}")
#: ``path, line N``, as runs and ground truths name a line.
COMMA = Wording(lambda path, number: f"{path}, line {number}")


_HEAD = 1 << 16  # what a file read as a stream keeps of its beginning, for its header


@dataclass
class TextFile:
    """A UTF-8 text file: its bytes, its SHA-256 and its number of lines.

    ``data[start:end]`` is the text (``start`` skips a byte-order mark; ``end`` may
    leave out a partial last line, :meth:`without_partial_line`). A file read as a
    stream (:func:`read_text` with ``stream=True``) keeps only its first bytes
    (``head``); :attr:`data` reads the rest when something asks for it.
    """

    path: Path
    sha256: str
    lines: int
    size: int
    wording: Wording = COLON
    start: int = 0
    end: int = -1
    #: Whether the last line has its line end (an empty file has).
    complete: bool = True
    head: bytes = field(default=b"", repr=False)
    _data: bytes | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.end < 0:
            self.end = self.size

    @property
    def streamed(self) -> bool:
        """Whether the bytes have not been read into memory (yet)."""
        return self._data is None

    @property
    def data(self) -> bytes:
        """The file's bytes, read now (and checked as UTF-8) for a file read as a stream."""
        if self._data is None:
            again = read_text(self.path, self.wording)
            if again.sha256 != self.sha256:
                raise InputError(f"{self.path}: changed while it was read; expected it to stay")
            self._data = again.data
        return self._data

    @property
    def text(self) -> str:
        """The text with every line end as ``\\n``."""
        text = bytes(memoryview(self.data)[self.start : self.end]).decode("utf-8")
        return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text

    def is_blank(self, start: int | None = None) -> bool:
        """Whether the file (from offset ``start``: the rows below a header, say) holds
        nothing but blanks and line ends."""
        start = self.start if start is None else start
        return _NOT_BLANK.search(self.data, start, self.end) is None

    def without_partial_line(self) -> TextFile:
        """The file without its last line, which has no line end (a write cut off)."""
        data = self.data
        last = max(data.rfind(b"\n", self.start, self.end), data.rfind(b"\r", self.start, self.end))
        return replace(self, end=max(last + 1, self.start), lines=self.lines - 1, complete=True)

    def first_line(self) -> tuple[int, str] | None:
        """The first line that is not blank, as ``(number, text)``; None if there is none."""
        found = self._first()
        return None if found is None else found[:2]

    def _first(self) -> tuple[int, str, int] | None:
        """``(number, text, offset after its line end)`` of the first line that is not blank,
        found in the head of a file read as a stream when it is there."""
        if self._data is None:
            whole = len(self.head) >= self.size
            found = _first_line(self.head, self.start, len(self.head))
            if found is not None and (whole or found[2] < len(self.head)):  # ended in the head
                return found
        return _first_line(self.data, self.start, self.end)


def _first_line(data: bytes, start: int, end: int) -> tuple[int, str, int] | None:
    position, number = start, 1
    while match := _BLANK_LINE.match(data, position, end):
        position, number = match.end(), number + 1
    if position >= end or not _NOT_BLANK.search(data, position, end):
        return None
    found = _LINE_END.search(data, position, end)
    stop, after = (found.start(), found.end()) if found else (end, end)
    try:
        return number, data[position:stop].decode("utf-8"), after
    except UnicodeDecodeError:  # in a head cut in a character; in a whole file, read_text
        return None  # refused it already


def read_text(
    path: str | Path, wording: Wording = COLON, *, stream: bool = False, hashed: bool = True
) -> TextFile:
    """Read a text file: its bytes, checked as UTF-8, its SHA-256 and its number of lines.

    A folder, a file that cannot be read, and one that is not UTF-8 raise
    :class:`~sbir_study.foundation.checks.InputError`; the last names the line (as
    ``wording`` does) and the byte at fault.

    ``stream`` hashes the file without holding it and keeps its first bytes only, for
    a large file that Arrow reads by itself (a run of millions of lines): its bytes
    are read, and checked, only when they are asked for (:attr:`TextFile.data`: a
    message about a line, a table Arrow refuses); Arrow checks the text it parses.
    ``hashed=False`` (not with ``stream``) leaves :attr:`TextFile.sha256` empty, for a
    reader that hashes :attr:`TextFile.data` itself, beside its parse
    (:func:`~sbir_study.foundation.provenance.data_sha256`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "old-mac.csv"
    >>> _ = path.write_bytes(b"\\xef\\xbb\\xbfa,b\\r1,2\\r")
    >>> text = read_text(path)
    >>> text.text, text.lines
    ('a,b\\n1,2\\n', 2)
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected a text file")
    try:
        digest = file_digest(path, keep=not stream, hashed=hashed or stream)
        if stream:
            with open(path, "rb") as opened:
                size = os.fstat(opened.fileno()).st_size
                head = opened.read(max(_HEAD, len(codecs.BOM_UTF8)))
                opened.seek(max(size - 1, 0))
                last = opened.read(1)
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    if stream:
        start = 3 if head.startswith(codecs.BOM_UTF8) else 0
        return TextFile(
            path,
            digest.sha256,
            digest.lines,
            size,
            wording,
            start,
            complete=last in (b"", b"\n", b"\r"),
            head=head,
        )
    data = digest.data or b""
    start = 3 if data.startswith(codecs.BOM_UTF8) else 0
    if not data.isascii():
        bad = _first_bad_byte(data, start)
        if bad is not None:
            line = _line_of(memoryview(data)[start:], bad - start)
            raise InputError(f"{wording.at(path, line)}: {wording.not_utf8.format(byte=data[bad])}")
    return TextFile(
        path,
        digest.sha256,
        digest.lines,
        len(data),
        wording,
        start,
        complete=data[-1:] in (b"", b"\n", b"\r"),
        _data=data,
    )


def _first_bad_byte(data: bytes, start: int) -> int | None:
    """The offset of the first byte that is not UTF-8, or None (checked in slices: a
    whole decode would hold the text a second time)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    view = memoryview(data)
    step = _UTF8_SLICE
    for offset in range(start, len(data), step):
        try:
            decoder.decode(view[offset : offset + step], final=offset + step >= len(data))
        except UnicodeDecodeError as error:
            # The error is placed in what the decoder held back of the previous slice (an
            # incomplete character) and this one.
            return offset + error.start - len(decoder.getstate()[0])
    return None


def _line_ends(array: np.ndarray) -> np.ndarray:
    """The offset of the last byte of every line end (LF, CR LF, a lone CR) in ``array``."""
    ends = np.flatnonzero(array == 10)
    if 13 in array:
        cr = np.flatnonzero(array == 13)
        lone = np.ones(cr.size, dtype=bool)
        inside = cr + 1 < array.size
        lone[inside] = array[cr[inside] + 1] != 10
        ends = np.union1d(ends, cr[lone])
    return ends


def _line_of(data, offset: int) -> int:
    """The line (from 1) that byte ``offset`` of ``data`` is on."""
    head = np.frombuffer(data, dtype=np.uint8)[:offset]
    return int(_line_ends(head).size) + 1
