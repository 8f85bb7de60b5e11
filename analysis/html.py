"""Self-contained HTML pages: the shared style, tables, embedded figures and number formats.

The reports of ``analyze`` and ``evaluate`` embed their figures as data URIs and
load nothing from the network, so a page opens in any browser, can be mailed,
and is archived with the data.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["STYLE", "figure_list", "isnan", "num", "p_text", "page_head", "share", "table"]

STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #222; line-height: 1.45; }
h1 { font-size: 1.6em; } h2 { font-size: 1.25em; margin-top: 2em;
     border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; margin: 0.8em 0; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; }
th { background: #f3f3f3; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.banner { background: #fff3cd; border: 2px solid #c9a227; padding: 0.7em 1em;
          font-weight: bold; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 0.9em; color: #444; }
code { font-size: 0.9em; }
"""


def page_head(title: str) -> list[str]:
    """The opening lines of a page, with its title and the shared style."""
    return [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{STYLE}</style></head><body>",
    ]


def figure_list(figures: Mapping[str, Path], captions: Mapping[str, str]) -> list[str]:
    if not figures:
        return ["<h2>Figures</h2>", "<p>Not drawn (<code>--no-figures</code>).</p>"]
    parts = ["<h2>Figures</h2>"]
    for name in figures:
        data = base64.b64encode(Path(figures[name]).read_bytes()).decode("ascii")
        caption = html.escape(captions.get(name, name))
        parts.append(
            f'<figure id="{name}"><img alt="{html.escape(name)}" '
            f'src="data:image/png;base64,{data}"><figcaption>{caption} '
            f"(<code>figures/{name}.pdf</code>)</figcaption></figure>"
        )
    return parts


def table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for row in rows:
        cells = []
        for value in row:
            numeric = isinstance(value, int | float) and not isinstance(value, bool)
            cls = ' class="num"' if numeric else ""
            cells.append(f"<td{cls}>{html.escape(str(value))}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def share(value) -> str:
    return "n/a" if value is None or isnan(value) else f"{100 * value:.1f}%"


def num(value, digits: int = 3) -> str:
    return "n/a" if value is None or isnan(value) else f"{value:.{digits}f}"


def p_text(value) -> str:
    if value is None or isnan(value):
        return "n/a"
    return f"{value:.2e}" if value < 1e-3 else f"{value:.4f}"


def isnan(value) -> bool:
    try:
        return math.isnan(float(value))
    except (TypeError, ValueError):
        return False
