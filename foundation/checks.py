"""Input checking shared by the whole toolkit.

Every problem with user input raises :class:`InputError`, one line naming the file, row,
field or parameter and what was expected; the command line exits 2 on it. The rules of
``docs/formats.md`` live here:

* **Ids.** A participant label is a BIDS label, letters and digits (:data:`PARTICIPANT_RULE`);
  a sketch or image id is letters, digits and ``._-``, not starting with a dot, at most
  :data:`MAX_ID_LENGTH` characters (:data:`ID_RULE`). Ids become file names and columns of
  whitespace-separated files, so a space, line break, NUL or ``/`` would forge lines or paths.
* **Recruitment ids** (Prolific, MTurk, SONA, ...) become labels by :func:`participant_label`.
* **Images.** No image is decoded whose header declares more than :data:`MAX_IMAGE_PIXELS`
  pixels (:func:`open_image`): a small file can declare a huge picture.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import unicodedata
import warnings
from collections.abc import Container, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

# NumPy and Pillow are imported where they are used: the command line imports InputError
# before it knows the command, and `sbir-study --version` should not pay for them.
if TYPE_CHECKING:
    import numpy as np
    from PIL import Image

__all__ = [
    "ID_RULE",
    "MAX_ID_LENGTH",
    "MAX_IMAGE_PIXELS",
    "MAX_LABEL_LENGTH",
    "MAX_SOURCE_ID_LENGTH",
    "PARTICIPANT_RULE",
    "InputError",
    "bad_ids",
    "check_id",
    "check_input_file",
    "check_option",
    "check_participant",
    "check_whole_number",
    "closest",
    "did_you_mean",
    "float_array",
    "open_image",
    "participant_label",
]

#: The longest sketch or image id accepted (ids become file names).
MAX_ID_LENGTH = 100
#: What a sketch or image id is, as messages say it.
ID_RULE = (
    f"an id of letters, digits and '._-' (not starting with '.', at most {MAX_ID_LENGTH} "
    "characters)"
)
#: What a participant label is, as messages say it.
PARTICIPANT_RULE = "a BIDS label of letters and digits only"
_ID = re.compile(rf"[A-Za-z0-9_-][A-Za-z0-9._-]{{0,{MAX_ID_LENGTH - 1}}}")
_LABEL = re.compile(r"[A-Za-z0-9]+")

#: The largest image, in pixels (width x height), that any reader decodes: 50
#: megapixels, an 8K frame and most camera photographs, far above any stimulus.
MAX_IMAGE_PIXELS = 50_000_000


class InputError(ValueError):
    """Bad input from the user: a file, a row, a field or a parameter."""


def check_option(name: str, value: object, allowed: Iterable[object]) -> object:
    """Return ``value`` if it is one of ``allowed``, else raise :class:`InputError` with a hint.

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
        message += did_you_mean(value, [str(a) for a in allowed])
    raise InputError(message)


def closest(given: str, choices: Iterable[str], *, cutoff: float = 0.6) -> str | None:
    """The choice ``given`` most likely stands for, or None.

    The one choice it begins (if longer than two characters), else the most similar by
    :class:`difflib.SequenceMatcher` ratio, at least ``cutoff`` (of equals, the first).

    >>> closest("ful", ["auto", "full", "summary"])
    'full'
    >>> closest("sumary", ["auto", "full", "summary"])
    'summary'
    >>> closest("xyz", ["auto", "full"]) is None
    True
    """
    choices = list(choices)
    starting = [c for c in choices if c.startswith(given)] if len(given) > 2 else []
    if len(starting) == 1:
        return starting[0]
    if not choices:
        return None
    ratios = [difflib.SequenceMatcher(None, given, choice).ratio() for choice in choices]
    best = max(range(len(choices)), key=ratios.__getitem__)
    return choices[best] if ratios[best] >= cutoff else None


def did_you_mean(given: str, choices: Iterable[str], *, prefix: str = "") -> str:
    """`` (did you mean 'x'?)`` for the :func:`closest` choice (``prefix`` before it), or ``""``.

    >>> "no column 'Ratng'" + did_you_mean("Ratng", ["Rating", "Subject"])
    "no column 'Ratng' (did you mean 'Rating'?)"
    >>> did_you_mean("seed", ["anchoring"], prefix="design.")
    ''
    """
    match = closest(given, choices)
    return f" (did you mean {prefix + match!r}?)" if match is not None else ""


def check_whole_number(
    name: str, value: object, minimum: int, *, none_ok: bool = False
) -> int | None:
    """Return ``value`` if it is a whole number >= ``minimum`` (or None with ``none_ok``).

    ``True``, ``False`` and ``2.0`` are not whole numbers here.

    >>> check_whole_number("max_raters", 5, 2)
    5
    >>> try:
    ...     check_whole_number("max_raters", True, 2, none_ok=True)
    ... except InputError as error:
    ...     print(error)
    max_raters: expected a whole number >= 2 or None, got True
    """
    if value is None and none_ok:
        return value
    if not (isinstance(value, int) and not isinstance(value, bool) and value >= minimum):
        alternative = " or None" if none_ok else ""
        raise InputError(
            f"{name}: expected a whole number >= {minimum}{alternative}, got {value!r}"
        )
    return value


# --- ids ---------------------------------------------------------------------------------------


def bad_ids(values: Iterable[object], *, participant: bool = False) -> np.ndarray:
    """Which of ``values`` break the id rule (the participant rule with ``participant``).

    A long column is checked once per distinct id.

    >>> bad_ids(["s1", "img_02.a", "a b", "../x", ".hidden", "x\\ny", ""]).tolist()
    [False, False, True, True, True, True, True]
    >>> bad_ids(["01", "P7", "p-1"], participant=True).tolist()
    [False, False, True]
    """
    import numpy as np

    pattern = _LABEL if participant else _ID
    values = values if isinstance(values, list | tuple | np.ndarray) else list(values)
    if len(values) <= 1024:
        return np.fromiter(
            (not (isinstance(v, str) and pattern.fullmatch(v)) for v in values),
            dtype=bool,
            count=len(values),
        )
    import pandas as pd

    codes, uniques = pd.factorize(pd.Series(values, dtype=object), use_na_sentinel=False)
    bad = np.fromiter(
        (not (isinstance(v, str) and pattern.fullmatch(v)) for v in uniques),
        dtype=bool,
        count=len(uniques),
    )
    return bad[codes]


def check_id(value: object, what: str = "id", *, participant: bool = False) -> str:
    """Return ``value`` if it is a valid id (participant label), else raise :class:`InputError`.

    ``what`` names the value in the message.

    >>> check_id("s01", "sketch_id")
    's01'
    >>> try:
    ...     check_id("s 01", "sketch_id")
    ... except InputError as error:
    ...     print(error)
    sketch_id: expected an id of letters, digits and '._-' (not starting with '.',
    at most 100 characters), got 's 01'
    """
    if bad_ids([value], participant=participant)[0]:
        rule = PARTICIPANT_RULE if participant else ID_RULE
        raise InputError(f"{what}: expected {rule}, got {value!r}")
    return str(value)


def check_participant(label: object, what: str = "participant") -> str:
    """:func:`check_id` with the participant rule.

    >>> check_participant("01")
    '01'
    """
    return check_id(label, what, participant=True)


#: The longest id a recruitment platform may send (Prolific's are 24 characters).
MAX_SOURCE_ID_LENGTH = 64
#: The longest participant label :func:`participant_label` makes.
MAX_LABEL_LENGTH = 64
#: Participant labels that R, pandas or a BIDS reader read as a missing value, in lower case
#: (they are compared so: ``NA``, ``None``, ``NULL`` are missing to pandas' ``read_csv``):
#: ``load_ratings`` refuses them, and :func:`participant_label` never gives one.
MISSING_LABELS = frozenset({"na", "n/a", "nan", "none", "null"})


def participant_label(source_id: object, taken: Container[str] = ()) -> str:
    """The participant label of an id as a recruitment platform sends it.

    The id's ASCII letters and digits (``R_1a-B.c 2`` gives ``R1aBc2``). Where that is empty,
    reads as missing (:data:`MISSING_LABELS`), is longer than :data:`MAX_LABEL_LENGTH` or is in
    ``taken`` (the labels of other ids), the label is those letters cut to length, ``x`` and the
    first 8 hex digits of the id's SHA-256 (16 or 32 should that be taken too). So Prolific,
    MTurk and SONA ids stay as they are, and ids differing only in punctuation get two labels.
    The label depends on what was seen before: keep it once given (``source_id`` beside it).

    Parameters
    ----------
    source_id
        1 to :data:`MAX_SOURCE_ID_LENGTH` characters, no control characters, not only spaces.
    taken
        Labels already given to other ids.

    Raises
    ------
    InputError
        For an id that is not such a text, or whose labels are all taken.

    Examples
    --------
    >>> participant_label("5f8d0e2a9b1c3d4e5f6a7b8c")  # Prolific
    '5f8d0e2a9b1c3d4e5f6a7b8c'
    >>> participant_label("R_3kVq9x-P.2")  # Qualtrics, with punctuation
    'R3kVq9xP2'
    >>> participant_label("R3kVq9xP2!", taken={"R3kVq9xP2"})  # another id, the same letters
    'R3kVq9xP2x079eb20b'
    >>> participant_label("---"), participant_label("n/a")
    ('xcb3f91d5', 'naxa683c5c5')
    """
    if not isinstance(source_id, str):
        raise InputError(f"participant id: expected text, got {source_id!r}")
    if not source_id.strip() or len(source_id) > MAX_SOURCE_ID_LENGTH:
        raise InputError(
            f"participant id: expected 1 to {MAX_SOURCE_ID_LENGTH} characters, not only "
            f"spaces, got {source_id!r}"
        )
    if any(unicodedata.category(c)[0] == "C" for c in source_id):
        raise InputError(f"participant id: expected no control characters, got {source_id!r}")
    letters = "".join(c for c in source_id if c.isascii() and c.isalnum())
    plain = (
        letters
        and letters.lower() not in MISSING_LABELS
        and len(letters) <= MAX_LABEL_LENGTH
        and letters not in taken
    )
    if plain:
        return letters
    digest = hashlib.sha256(source_id.encode("utf-8")).hexdigest()
    for digits in (8, 16, 32):
        label = f"{letters[: MAX_LABEL_LENGTH - 1 - digits]}x{digest[:digits]}"
        if label not in taken:
            return label
    raise InputError(f"participant id: every label of {source_id!r} is taken by another id")


# --- files -------------------------------------------------------------------------------------


def check_input_file(path: str | Path, expected: str) -> Path:
    """``path`` if it is an existing file, else :class:`InputError` saying what it is (``expected``
    says what it should be).
    """
    path = Path(path)
    if path.is_file():
        return path
    if path.is_dir():
        raise InputError(f"{path}: is a folder; expected {expected}")
    if path.exists():
        raise InputError(f"{path}: is not a regular file; expected {expected}")
    parent = next((p for p in path.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise InputError(f"{path}: {parent} is a file, not a folder; expected {expected}")
    raise InputError(f"{path}: no such file; expected {expected}")


# --- images ------------------------------------------------------------------------------------


def open_image(path: str | Path) -> Image.Image:
    """Open an image (a context manager) after checking the pixels its header declares.

    More than :data:`MAX_IMAGE_PIXELS`, or a file Pillow cannot identify, raises
    :class:`InputError` before any decoding.

    >>> import tempfile, pathlib
    >>> from PIL import Image
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> Image.new("1", (10_000, 6_000)).save(folder / "huge.png")  # 60 MP, a few kB
    >>> try:
    ...     open_image(folder / "huge.png")
    ... except InputError as error:
    ...     print(str(error).split(": ", 1)[1])
    declares 60,000,000 pixels (10000 x 6000); expected at most 50,000,000 (a decompression bomb?)
    """
    from PIL import Image, UnidentifiedImageError

    path = Path(path)
    with warnings.catch_warnings():
        # Pillow only warns between its own limit and twice it; here both are errors.
        warnings.simplefilter("error", Image.DecompressionBombWarning)
        try:
            image = Image.open(path)
        except (Image.DecompressionBombError, Image.DecompressionBombWarning) as error:
            declared = re.search(r"\((\d+) pixels\)", str(error))
            count = f"{int(declared.group(1)):,}" if declared else f"over {MAX_IMAGE_PIXELS:,}"
            raise InputError(
                f"{path}: declares {count} pixels; expected at most {MAX_IMAGE_PIXELS:,} "
                "(a decompression bomb?)"
            ) from None
        except (OSError, UnidentifiedImageError, SyntaxError, ValueError) as error:
            reason = getattr(error, "strerror", None) or str(error) or type(error).__name__
            reason = reason.replace(f" {str(path)!r}", "").replace(str(path), "the file")
            raise InputError(f"{path}: cannot be read as an image ({reason})") from None
    width, height = image.size
    if width * height > MAX_IMAGE_PIXELS:
        image.close()
        raise InputError(
            f"{path}: declares {width * height:,} pixels ({width} x {height}); expected at "
            f"most {MAX_IMAGE_PIXELS:,} (a decompression bomb?)"
        )
    return image


def float_array(values: object, name: str = "ratings") -> np.ndarray:
    """``values`` (arrays, nested lists, pandas objects of any numeric dtype, nullable ones too)
    as float64 with NaN for every missing cell.

    >>> import pandas as pd
    >>> float_array(pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [2.0, 3.0]}))
    array([[ 1.,  2.],
           [nan,  3.]])
    >>> float_array([[1, pd.NA], [2, 3]])
    array([[ 1., nan],
           [ 2.,  3.]])
    """
    import numpy as np
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


def causes(error: BaseException) -> Iterator[BaseException]:
    """The exceptions behind ``error`` (cause or context), nearest first, each once."""
    seen = {id(error)}
    behind = error.__cause__ or error.__context__
    while behind is not None and id(behind) not in seen:
        seen.add(id(behind))
        yield behind
        behind = behind.__cause__ or behind.__context__
