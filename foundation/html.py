"""Self-contained HTML pages from Jinja2 templates: the environment, number formats, figures.

Every page (the ``analyze`` and ``evaluate`` reports, ``serve``'s status page) is a template
of its package's ``templates`` folder extending this package's ``base.html.jinja`` and using
the macros of ``macros.html.jinja``. Figures are embedded as data URIs and nothing is loaded
from the network, so a page opens anywhere and is archived with the data.
"""

from __future__ import annotations

import base64
import functools
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, SupportsFloat

from .checks import InputError

if TYPE_CHECKING:
    import jinja2

__all__ = [
    "DEFAULT_FIGURE_FORMATS",
    "FIGURE_FORMATS",
    "EmbeddedFigure",
    "at_floor",
    "embedded_figures",
    "environment",
    "figure_formats",
    "isnan",
    "num",
    "numeric",
    "p_text",
    "render",
    "share",
    "software_rows",
]

#: The package whose ``templates`` folder holds the base template and the macros.
_BASE_PACKAGE = "sbir_study.foundation"


@functools.cache
def environment(package: str = _BASE_PACKAGE) -> jinja2.Environment:
    """The Jinja2 environment of ``package``'s pages: its ``templates`` folder, then this package's.

    It escapes every value (autoescape), fails on a name not given (``StrictUndefined``), leaves
    no blank lines for block tags, and has this module's ``num``, ``p_text``, ``share`` filters
    and ``numeric`` test.

    >>> environment().from_string("{{ name }} {{ 0.12345 | num }}").render(name="<b>")
    '&lt;b&gt; 0.123'
    """
    import jinja2  # only when a page is written: serve answers its participants without it

    loaders = [jinja2.PackageLoader(package)]
    if package != _BASE_PACKAGE:
        loaders.append(jinja2.PackageLoader(_BASE_PACKAGE))
    pages = jinja2.Environment(
        loader=jinja2.ChoiceLoader(loaders),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    pages.filters.update(num=num, p_text=p_text, share=share)
    pages.tests["numeric"] = numeric
    return pages


def render(package: str, template: str, /, **context: object) -> str:
    """The page ``template`` of ``package``'s templates, filled with ``context``."""
    return environment(package).get_template(template).render(**context)


#: The file formats a figure can be written in, and the default: the PNG, which the
#: reports embed, and a PDF with its fonts embedded as TrueType, which journals take.
#: SVG is for pages and editors (its text drawn as paths: the same on every machine).
FIGURE_FORMATS = ("png", "pdf", "svg")
DEFAULT_FIGURE_FORMATS = ("png", "pdf")


def figure_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """The figure formats ``formats`` names (comma-separated or a sequence), each once, in the
    order of :data:`FIGURE_FORMATS`; ``png`` must be among them (the reports embed it).

    >>> figure_formats("pdf, png,pdf")
    ('png', 'pdf')
    >>> try:
    ...     figure_formats("pdf")
    ... except InputError as error:
    ...     print(error)
    figure formats: got 'pdf', expected png among them (the report embeds the PNG figures)
    """
    given = formats.split(",") if isinstance(formats, str) else list(formats)
    names = [str(name).strip().lower() for name in given if str(name).strip()]
    shown = formats if isinstance(formats, str) else ",".join(map(str, formats))
    unknown = [name for name in names if name not in FIGURE_FORMATS]
    if unknown:
        raise InputError(
            f"figure formats: got {unknown[0]!r} in {shown!r}, expected a "
            f"comma-separated list of {', '.join(FIGURE_FORMATS)}"
        )
    if "png" not in names:
        raise InputError(
            f"figure formats: got {shown!r}, expected png among them (the report "
            "embeds the PNG figures)"
        )
    return tuple(name for name in FIGURE_FORMATS if name in names)


class EmbeddedFigure(NamedTuple):
    """A figure as a page shows it (the ``figure_list`` macro)."""

    #: The figure's name (its files' stem), the id of its element on the page.
    name: str
    #: The PNG as a data URI.
    uri: str
    #: The figure's other files written beside the PNG ("figures/fig5_interuser.pdf").
    files: tuple[str, ...]


def embedded_figures(figures: Mapping[str, Path]) -> list[EmbeddedFigure]:
    """The figures (name: PNG file) in order, each PNG embedded, with its files in the other
    formats written beside it.
    """
    embedded = []
    for name, file in figures.items():
        png = Path(file)
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        others = tuple(
            f"figures/{name}.{suffix}"
            for suffix in FIGURE_FORMATS[1:]
            if png.with_suffix(f".{suffix}").is_file()
        )
        embedded.append(EmbeddedFigure(name, f"data:image/png;base64,{data}", others))
    return embedded


def software_rows(software: Mapping[str, str | None]) -> list[tuple[str, str]]:
    """The rows of a page's software table: each library and its version, or "not installed".

    >>> software_rows({"numpy": "2.1.0", "psychopy": None})
    [('numpy', '2.1.0'), ('psychopy', 'not installed')]
    """
    return [(name, version or "not installed") for name, version in software.items()]


#: A number as the pages write it: 0.44, 1.73e-35, 12%, 9.99e-04 ‡ (at its floor), 2,480,000.
_NUMBER = re.compile(r"(< )?[-+]?(\d{1,3}(,\d{3})+(\.\d*)?|\d+\.?\d*|\.\d+)(e[-+]?\d+)?%?( ‡)?")


def numeric(value: object) -> bool:
    """Whether a table cell holds one number (right-aligned, never broken): an int, a float, or a
    text that is one number as the pages write it.

    >>> numeric(3), numeric("1,984"), numeric("< 1e-300"), numeric("sub-01"), numeric(True)
    (True, True, True, False, False)
    """
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and _NUMBER.fullmatch(value) is not None


def share(value: float | None) -> str:
    """A share in percent with one decimal ("86.0%"); "n/a" for a missing one."""
    return "n/a" if value is None or isnan(value) else f"{100 * value:.1f}%"


def num(value: float | None, digits: int = 3) -> str:
    """A statistic with ``digits`` decimals ("0.440"); "n/a" for a missing one."""
    return "n/a" if value is None or isnan(value) else f"{value:.{digits}f}"


def p_text(value: float | None) -> str:
    """A p-value as the pages print it; 0 (an underflow) is "< 1e-300", which does not read as
    impossible.

    >>> p_text(0.0312), p_text(2.5e-9), p_text(0.0)
    ('0.0312', '2.50e-09', '< 1e-300')
    """
    if value is None or isnan(value):
        return "n/a"
    if value == 0:
        return "< 1e-300"
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


def at_floor(value: float | None, floor: float) -> bool:
    """Whether a resampling p-value sits at the smallest value its test can give.

    >>> at_floor(1 / 1001, 1 / 1001), at_floor(2 / 1001, 1 / 1001), at_floor(None, 0.1)
    (True, False, False)
    """
    if value is None or isnan(value) or isnan(floor):
        return False
    return float(value) <= floor * (1 + 1e-9)


def isnan(value: object) -> bool:
    """Whether ``value`` is NaN (False for anything that is not a number, None included)."""
    if not isinstance(value, SupportsFloat | str):
        return False
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False
