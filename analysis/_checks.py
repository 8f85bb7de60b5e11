"""Input checking shared by the whole toolkit.

Every problem with user input raises :class:`InputError`, whose message is one
line naming the file, row, field or parameter and what was expected. The
command line turns it into exit status 2.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

__all__ = ["InputError", "check_option"]


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
