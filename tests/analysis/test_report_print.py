"""Reports a reader trusts: what they say, and that they print on A4 with nothing cut off.

The reports are printed by headless Chromium, as a reader's browser prints them, and
measured there; the PDF's page size is read by pdfinfo (poppler-utils).
"""

import base64
import json
import re
import shutil
import subprocess

import numpy as np
import pandas as pd
import pytest

from tests.helpers import run_main

#: A4 at CSS's 96 px per inch, less the reports' 12 mm page margins: the width printed.
A4_CONTENT_PX = (210 - 2 * 12) / 25.4 * 96


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """A simulated BIDS study (anchoring included), its analysis and an evaluation of 3 runs
    (the commands run in this process: what they write, not their process, is tested here;
    the figures as the PNGs the reports embed, the PDFs being no part of a printed report)."""
    root = tmp_path_factory.mktemp("reports")
    data = root / "data with a long folder name for the file table"
    result = run_main(
        "simulate",
        "--out",
        str(data),
        "--participants",
        "12",
        "--sketches",
        "4",
        "--images",
        "8",
        "--seed",
        "3",
    )
    assert result.returncode == 0, result.stderr
    result = run_main(
        "analyze",
        str(data),
        "--out",
        str(root / "analysis"),
        "--bootstrap",
        "50",
        "--permutations",
        "20",
        "--figure-formats",
        "png",
    )
    assert result.returncode == 0, result.stderr
    truth = pd.read_csv(root / "analysis" / "ground_truth.csv")
    rng = np.random.default_rng(0)
    runs = []
    for k, noise in enumerate((0.3, 1.0, 3.0)):
        run = truth[["sketch_id", "image_id"]].assign(
            score=-truth["mean_rating"] + rng.normal(0, noise, len(truth))
        )
        runs.append(root / f"engine{k}.csv")
        run.to_csv(runs[-1], index=False)
    result = run_main(
        "evaluate",
        "--ground-truth",
        str(root / "analysis" / "ground_truth.csv"),
        "--ratings",
        str(data),
        "--out",
        str(root / "evaluation"),
        "--bootstrap",
        "200",
        "--permutations",
        "100",
        "--figure-formats",
        "png",
        *map(str, runs),
    )
    assert result.returncode == 0, result.stderr
    # The same evaluation from the ground truth alone: simulated by analyze's own records.
    result = run_main(
        "evaluate",
        "--ground-truth",
        str(root / "analysis" / "ground_truth.csv"),
        "--out",
        str(root / "evaluation-truth-only"),
        "--bootstrap",
        "200",
        "--permutations",
        "100",
        "--figure-formats",
        "png",
        *map(str, runs),
    )
    assert result.returncode == 0, result.stderr
    return root


def _page(path) -> str:
    return path.read_text(encoding="utf-8")


def test_analysis_report_text_reads(reports):
    page = _page(reports / "analysis" / "report.html")
    body = page[page.index("<body>") :]
    assert body.index("SIMULATED DATA") < body.index("<h1>")
    # The demonstration phase is not rated by design: never "missing 252/252".
    row = re.search(r"<tr><td>anchor_demo</td>(.*?)</tr>", page).group(1)
    assert "not rated by design" in row
    # 12 participants' BIDS files: the hashes fold away under their count.
    assert re.search(r"<details><summary>1[23] input files with their SHA-256", page)
    for library in ("numpy", "scipy", "pandas", "matplotlib", "pyarrow"):
        assert f"<td>{library}</td>" in page
    # 20 permutations: a permutation p-value of 1/21 sits at the floor, and says so.
    table = pd.read_csv(reports / "analysis" / "kendall_w.csv")
    floored = np.isclose(table["skillings_mack_permutation_p_value"], 1 / 21)
    assert floored.any()
    assert f"1/(20 + 1) = {1 / 21:.4f}, was reached ({floored.sum()} of {len(table)}" in page


def test_evaluation_report_text_reads(reports):
    page = _page(reports / "evaluation" / "report.html")
    body = page[page.index("<body>") :]
    assert body.index("SIMULATED DATA") < body.index("<h1>")
    assert "Its p-value is one-sided, P(tau >= observed), as in the paper." in page
    assert "its p-value is greater" not in page
    # Why a system can beat simulated people, in the report itself, with the paper's figure.
    assert "a demonstration of the pipeline, not of the systems" in page
    assert "mean tau_b of 0.277" in page
    assert "grey band its 95% bootstrap interval" in page
    result = json.loads((reports / "evaluation" / "evaluation.json").read_text())
    assert result["simulated"] is True
    # Without --ratings, the ground truth's own analysis record still says simulated.
    assert "SIMULATED DATA" in _page(reports / "evaluation-truth-only" / "report.html")


def test_banner_needs_the_records_of_the_ground_truth_it_names(reports, tmp_path):
    # A copy of the ground truth outside its analysis folder has no record: no banner
    # (nothing in it says simulated), and the report does not guess.
    copy = tmp_path / "truth" / "ground_truth.csv"
    copy.parent.mkdir()
    shutil.copy(reports / "analysis" / "ground_truth.csv", copy)
    run = reports / "engine0.csv"
    result = run_main(
        "evaluate",
        "--ground-truth",
        str(copy),
        "--out",
        str(tmp_path / "ev"),
        "--bootstrap",
        "100",
        "--permutations",
        "100",
        str(run),
    )
    assert result.returncode == 0, result.stderr
    assert "SIMULATED DATA" not in _page(tmp_path / "ev" / "report.html")
    assert "simulated ratings" not in result.stdout


def test_permutation_floor_is_stated_where_reached(reports):
    page = _page(reports / "evaluation" / "report.html")
    comparisons = pd.read_csv(reports / "evaluation" / "comparisons.csv")
    tau = comparisons[comparisons["measure"] == "tau_b"]
    # 100 random sign flips over 4 sketches: 2^4 = 16 patterns are enumerated instead,
    # so the smallest two-sided p-value is 2/16 (scipy.stats.permutation_test gives the same).
    from scipy import stats

    exact = stats.permutation_test(
        (np.array([0.1, 0.2, 0.3, 0.4]),), np.mean, permutation_type="samples"
    ).pvalue
    assert exact == pytest.approx(2 / 16)
    floored = np.isclose(tau["permutation_p_value"], 2 / 16)
    if floored.any():
        assert f"{int(floored.sum())} of {len(tau)} permutation p-values are the smallest" in page
    else:
        assert "At the floor" not in page


def _chromium():
    from tests.study.online.support import chromium

    return chromium(width=1200, height=1000)


def _printed_pdf(driver) -> bytes:
    """The open page as Chromium prints it (its own page size, backgrounds included)."""
    return base64.b64decode(
        driver.execute_cdp_cmd(
            "Page.printToPDF", {"preferCSSPageSize": True, "printBackground": True}
        )["data"]
    )


def _print(page, pdf):
    """Print the HTML file ``page`` with Chromium into ``pdf``; return ``pdf``."""
    driver = _chromium()
    try:
        driver.get(page.as_uri())
        pdf.write_bytes(_printed_pdf(driver))
    finally:
        driver.quit()
    return pdf


def _print_layout(driver, page) -> dict:
    """Open ``page`` laid out for print on an A4 page's width; measure what overflows."""
    driver.get(page.as_uri())
    driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
    driver.execute_cdp_cmd("Emulation.setScrollbarsHidden", {"hidden": True})  # paper has none
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": round(A4_CONTENT_PX), "height": 1100, "deviceScaleFactor": 1, "mobile": False},
    )
    return driver.execute_script("""
        const width = document.documentElement.clientWidth;
        const wide = [];
        for (const element of document.body.querySelectorAll("*")) {
            const box = element.getBoundingClientRect();
            if (box.width > 0 && box.right > width + 0.5) {
                wide.push(element.tagName + " " + element.textContent.slice(0, 40));
            }
        }
        return {width: width, scroll: document.documentElement.scrollWidth, wide: wide,
                images: Array.from(document.images).map(i => i.getBoundingClientRect().width)};
    """)


@pytest.mark.parametrize("report", ["analysis", "evaluation"])
@pytest.mark.browser
def test_report_prints_on_a4_with_nothing_cut_off(reports, report, tmp_path):
    driver = _chromium()
    try:
        layout = _print_layout(driver, reports / report / "report.html")
        pdf = _printed_pdf(driver)
    finally:
        driver.quit()
    assert layout["width"] == round(A4_CONTENT_PX)
    assert layout["scroll"] <= layout["width"], layout["wide"][:5]
    assert layout["wide"] == []
    # Figures scale down to the page; there is one per figure file.
    assert layout["images"] and max(layout["images"]) <= layout["width"]
    (tmp_path / "report.pdf").write_bytes(pdf)
    info = subprocess.run(
        ["pdfinfo", str(tmp_path / "report.pdf")], capture_output=True, text=True, check=True
    ).stdout
    assert re.search(r"Page size:\s+59[45]\.\d+ x 841\.\d+ pts \(A4\)", info), info
    assert int(re.search(r"Pages:\s+(\d+)", info).group(1)) >= 2


def _pages_text(pdf) -> list[str]:
    """The text of each page of ``pdf``, as pdftotext (poppler-utils) lays it out."""
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True)
    pages = int(re.search(r"Pages:\s+(\d+)", info.stdout).group(1))
    return [
        subprocess.run(
            ["pdftotext", "-layout", "-f", str(k), "-l", str(k), str(pdf), "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for k in range(1, pages + 1)
    ]


def _marked(page: str) -> tuple[str, int]:
    """``page`` with each table's header and last row marked by invisible text (T<k>H, T<k>L).

    pdftotext extracts transparent text like any other, so the printed page of a table's
    header and of its last row can be told apart from any prose with the same words.
    """

    def mark(text: str) -> str:
        return f'<span style="color: transparent; font-size: 1px">{text}</span>'

    chunks = page.split("<table>")
    for k in range(1, len(chunks)):
        chunk = chunks[k].replace("<th>", "<th>" + mark(f"T{k}H"), 1)
        last = chunk.rindex("<tr>", 0, chunk.index("</tbody>"))
        cell = chunk.index(">", chunk.index("<td", last)) + 1
        chunks[k] = chunk[:cell] + mark(f"T{k}L") + chunk[cell:]
    return "<table>".join(chunks), len(chunks) - 1


@pytest.mark.browser
def test_printed_analysis_keeps_tables_whole(reports, tmp_path):
    # Chromium prints the page; pdftotext reads each printed page back.
    report = reports / "analysis" / "report.html"
    marked, n_tables = _marked(report.read_text(encoding="utf-8"))
    assert n_tables >= 5
    copy = tmp_path / "report-marked.html"  # self-contained: its figures are embedded
    copy.write_text(marked, encoding="utf-8")
    pages = _pages_text(_print(copy, tmp_path / "report.pdf"))
    assert len(pages) >= 2
    # The last page holds more than the software table: its section, heading and all.
    assert "Inputs and software" in pages[-1]
    assert "The software that computed the numbers" in pages[-1]
    # No row printed apart from its table: each table here fits a page, so its header and
    # its last row are on the same page (a header repeated on a second page would put
    # the header's first appearance on an earlier page than the last row).
    # A table folded away in a closed <details> (the input files) is not printed at all.
    printed = 0
    for k in range(1, n_tables + 1):
        head = [n for n, text in enumerate(pages) if f"T{k}H" in text]
        tail = [n for n, text in enumerate(pages) if f"T{k}L" in text]
        assert bool(head) == bool(tail), (k, head, tail)
        if head:
            assert head[0] == tail[-1], (k, head, tail)
            printed += 1
    assert printed >= 5


@pytest.mark.browser
def test_a_table_that_fits_a_page_is_never_split(tmp_path):
    # A table placed where a page break would fall between its rows: printed with the
    # reports' style (their base template and table macro), it moves to the next page
    # whole, its header with it.
    from sbir_study.foundation.html import environment

    rows = [(f"row{k}", k) for k in range(1, 16)]
    page = tmp_path / "page.html"
    template = environment().from_string(
        '{% extends "base.html.jinja" %}{% from "macros.html.jinja" import table %}'
        "{% block title %}split{% endblock %}{% block body %}"
        '<div style="height: 250mm">spacer</div>{{ table(["first", "second"], rows) }}'
        "{% endblock %}"
    )
    page.write_text(template.render(simulated=None, rows=rows), encoding="utf-8")
    pages = _pages_text(_print(page, tmp_path / "page.pdf"))
    assert len(pages) == 2
    assert "spacer" in pages[0] and "row" not in pages[0]
    assert re.findall(r"row\d+", pages[1]) == [name for name, _ in rows], pages
