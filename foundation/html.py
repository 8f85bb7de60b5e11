"""Self-contained HTML pages: the shared style, tables, embedded figures and number formats.

The reports of ``analyze`` and ``evaluate`` embed their figures as data URIs and
load nothing from the network, so a page opens in any browser, can be mailed,
and is archived with the data.
"""

from __future__ import annotations

import base64
import html
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from .checks import InputError

__all__ = [
    "DEFAULT_FIGURE_FORMATS",
    "FIGURE_FORMATS",
    "STYLE",
    "at_floor",
    "collapsed",
    "figure_formats",
    "figure_list",
    "isnan",
    "num",
    "p_text",
    "page_head",
    "share",
    "simulated_banner",
    "software_table",
    "table",
]

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em;
     border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.hash { font-family: ui-monospace, monospace; font-size: 0.85em; word-break: break-all; }
td.path { overflow-wrap: anywhere; }
.wide { overflow-x: auto; }
.banner { background: #fff3cd; border: 2px solid #c9a227; padding: 0.7em 1em;
          font-weight: bold; }
.note { font-size: 0.9em; color: #444; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; height: auto; box-sizing: border-box;
                                         border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
details > summary { cursor: pointer; margin: 0.6em 0; }
code { font-size: 0.9em; }
@page { size: A4; margin: 12mm; }
@media print {
  body { max-width: none; margin: 0; padding: 0; font-size: 9pt; line-height: 1.3; }
  h2 { break-after: avoid; }
  .wide { overflow: visible; }
  /* A table that fits on a page prints whole, never one row apart from the rest; a longer
     one breaks between rows and repeats its header. A .keep block stays together. */
  .wide, .keep { break-inside: avoid; }
  thead { display: table-header-group; }
  table { font-size: 7pt; }
  th, td { padding: 0.15em 0.3em; }
  tr, figure, .banner { break-inside: avoid; }
  figure img { max-height: 230mm; object-fit: contain; }
}
"""


def page_head(title: str) -> list[str]:
    """The opening lines of a page, with its title and the shared style."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
    ]


#: The file formats a figure can be written in, and the default: the PNG, which the
#: reports embed, and a PDF with its fonts embedded as TrueType, which journals take.
#: SVG is for pages and editors (its text drawn as paths: the same on every machine).
FIGURE_FORMATS = ("png", "pdf", "svg")
DEFAULT_FIGURE_FORMATS = ("png", "pdf")


def figure_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """The figure formats ``formats`` names (a comma-separated text or a sequence), each
    once, in the order of :data:`FIGURE_FORMATS`; raise :class:`InputError` for an unknown
    one or a list without ``png`` (the reports embed the PNG figures).

    Examples
    --------
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


def figure_list(figures: Mapping[str, Path], captions: Mapping[str, str]) -> list[str]:
    """The report's figures, each PNG embedded, its caption naming the other files of the
    figure that were written beside it (the PDF, the SVG)."""
    if not figures:
        return ["<h2>Figures</h2>", "<p>Not drawn (<code>--no-figures</code>).</p>"]
    parts = ["<h2>Figures</h2>"]
    for name in figures:
        png = Path(figures[name])
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        caption = html.escape(captions.get(name, name))
        others = ", ".join(
            f"<code>figures/{html.escape(name)}.{suffix}</code>"
            for suffix in FIGURE_FORMATS[1:]
            if png.with_suffix(f".{suffix}").is_file()
        )
        parts.append(
            f'<figure id="{name}"><img alt="{html.escape(name)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{caption}'
            f"{f' ({others})' if others else ''}</figcaption></figure>"
        )
    return parts


def table(
    header: Sequence[str], rows: Sequence[Sequence], classes: Mapping[int, str] | None = None
) -> str:
    """An HTML table; numbers right-aligned; ``classes`` gives a column (by index) a class
    (``"hash"``, ``"path"``: long unbroken text allowed to wrap so the table fits a page).

    Examples
    --------
    >>> page = table(["a", "b"], [(1, "x")], classes={1: "hash"})
    >>> page[page.index("<tbody>") :]
    '<tbody><tr><td class="num">1</td><td class="hash">x</td></tr></tbody></table></div>'
    """
    classes = classes or {}
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for index, value in enumerate(row):
            name = classes.get(index, "num" if _numeric(value) else "")
            cls = f' class="{name}"' if name else ""
            cells.append(f"<td{cls}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<div class="wide"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(body)}</tbody></table></div>"
    )


#: A number as the pages write it: 0.44, 1.73e-35, 12%, 9.99e-04 ‡ (at its floor), 2,480,000.
_NUMBER = re.compile(r"(< )?[-+]?(\d{1,3}(,\d{3})+(\.\d*)?|\d+\.?\d*|\.\d+)(e[-+]?\d+)?%?( ‡)?")


def _numeric(value) -> bool:
    """Whether a cell holds one number (right-aligned, never broken across lines)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float):
        return True
    return isinstance(value, str) and _NUMBER.fullmatch(value) is not None


def collapsed(summary: str, content: str, *, open_up_to: int | None = None, n: int = 0) -> str:
    """``content`` under a ``<details>`` element headed by ``summary``; open when it holds at
    most ``open_up_to`` entries (``n``), so a short list shows and a long one folds away.

    Examples
    --------
    >>> collapsed("3 files", "<p>...</p>", open_up_to=5, n=3)
    '<details open><summary>3 files</summary><p>...</p></details>'
    """
    opened = " open" if open_up_to is not None and n <= open_up_to else ""
    return f"<details{opened}><summary>{html.escape(summary)}</summary>{content}</details>"


def simulated_banner(what: str) -> str:
    """The banner at the top of a report made from simulated ratings.

    ``what`` says where the page's numbers come from (e.g. "these ratings").
    """
    return (
        f'<p class="banner">SIMULATED DATA: {html.escape(what)} were produced by '
        "<code>sbir-study simulate</code>, not by people (their own records say so). The "
        "numbers show what the pipeline computes, not a finding.</p>"
    )


def software_table(software: Mapping[str, str | None]) -> str:
    """The versions of the software that made the numbers and figures of a page."""
    rows = [(name, version or "not installed") for name, version in software.items()]
    return table(["software", "version"], rows)


def share(value) -> str:
    return "n/a" if value is None or isnan(value) else f"{100 * value:.1f}%"


def num(value, digits: int = 3) -> str:
    return "n/a" if value is None or isnan(value) else f"{value:.{digits}f}"


def p_text(value) -> str:
    """A p-value as the pages print it; one that underflowed to 0 (a crowd's chi-square
    tests) is "< 1e-300", not "0.00e+00", which reads as impossible.

    >>> p_text(0.0312), p_text(2.5e-9), p_text(0.0)
    ('0.0312', '2.50e-09', '< 1e-300')
    """
    if value is None or isnan(value):
        return "n/a"
    if value == 0:
        return "< 1e-300"
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


def at_floor(value, floor: float) -> bool:
    """Whether a resampling p-value sits at the smallest value its test can give.

    Examples
    --------
    >>> at_floor(1 / 1001, 1 / 1001), at_floor(2 / 1001, 1 / 1001), at_floor(None, 0.1)
    (True, False, False)
    """
    if value is None or isnan(value) or isnan(floor):
        return False
    return float(value) <= floor * (1 + 1e-9)


def isnan(value) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False
