"""Input checking shared by the whole toolkit.

Every problem with user input raises :class:`InputError`, whose message is one
line naming the file, row, field or parameter and what was expected. The
command line turns it into exit status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from pathlib import Path

import numpy as np

__all__ = ["InputError", "check_option", "float_array", "read_utf8"]


class InputError(ValueError):
    """Bad input from the user: a file, a row, a field or a parameter."""


def check_option(name: str, value: object, allowed: Iterable[object]) -> object:
    """Return ``value`` if it is one of ``allowed``, else raise :class:`InputError`.

    The message names the parameter, the allowed values and, for a string that
    is close to one of them, the likely intended value.

    Examples
    --------
    >>> check_option("pairwise", "full", ("auto", "full", "summary"))
    'full'
    >>> try:
    ...     check_option("pairwise", "ful", ("auto", "full", "summary"))
    ... except InputError as error:
    ...     print(error)
    pairwise: got 'ful', expected one of 'auto', 'full', 'summary' (did you mean 'full'?)
    """
    allowed = tuple(allowed)
    if value in allowed:
        return value
    message = f"{name}: got {value!r}, expected one of {', '.join(map(repr, allowed))}"
    if isinstance(value, str):
        close = difflib.get_close_matches(value, [str(a) for a in allowed], n=1)
        if close:
            message += f" (did you mean {close[0]!r}?)"
    raise InputError(message)


def read_utf8(path: Path) -> tuple[bytes, str]:
    """The bytes of a text file and their UTF-8 text (a byte-order mark dropped).

    A file that cannot be read, or is not UTF-8, raises :class:`InputError`
    naming the file and, for the latter, the line and the byte at fault.
    """
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise InputError(f"{path}: cannot be read ({error.strerror or error})") from None
    try:
        return raw, raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = raw[: error.start].count(b"\n") + 1
        raise InputError(
            f"{path}: line {line}: not UTF-8 (byte 0x{raw[error.start]:02x}); "
            "expected a UTF-8 text file"
        ) from None


def float_array(values, name: str = "ratings") -> np.ndarray:
    """``values`` as a float64 array with NaN for every missing cell.

    Accepts NumPy arrays and nested lists of any integer or float dtype, and
    pandas DataFrames and Series of any integer or float dtype, the nullable
    ones (``Int64``, ``Float64``, ...) included: ``pd.NA`` and ``None`` become NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> float_array(pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [2.0, 3.0]}))
    array([[ 1.,  2.],
           [nan,  3.]])
    >>> float_array([[1, pd.NA], [2, 3]])
    array([[ 1., nan],
           [ 2.,  3.]])
    """
    import pandas as pd

    if isinstance(values, pd.DataFrame | pd.Series | pd.Index | pd.api.extensions.ExtensionArray):
        try:
            return values.to_numpy(dtype=np.float64, na_value=np.nan)
        except (TypeError, ValueError):
            raise InputError(f"{name}: expected numbers or missing values") from None
    try:
        return np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        pass
    cells = np.asarray(values, dtype=object)
    missing = pd.isna(cells)
    try:
        return np.where(missing, np.nan, np.where(missing, 0.0, cells).astype(np.float64))
    except (TypeError, ValueError):
        raise InputError(f"{name}: expected numbers or missing values") from None
