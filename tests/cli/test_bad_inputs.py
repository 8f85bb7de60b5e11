# ruff: noqa: E501 (the table of cases reads best with one case per line)
"""Every command, every kind of input, as a user gets it wrong: one line, exit 2, nothing touched.

Each case runs ``sbir-study`` (through ``sbir_study.cli.main`` in this process, a few
through the installed script in a fresh one, as a user runs it) inside a world of real
inputs and outputs (a stimulus set, a BIDS dataset, ratings tables, an analysis, an
evaluation, runs, HPatches files, protocols) and the bad inputs of every case. It checks
the exit status (2), that stderr is one line naming the right file, line, field or option
(no usage block, no traceback), and that every file and folder of the world is
byte-for-byte what it was before: nothing written, nothing removed, no temporary folder
left.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from PIL import Image

from tests.helpers import HPATCHES, ROOT, SBIR_STUDY, SMALL_SET, run_main, snapshot


@dataclass(frozen=True)
class Case:
    """One bad command line: its arguments and what the one message line must contain.

    ``{W}`` in an argument or fragment is the world's folder, ``{C}`` the case's own
    folder (holding ``files``; a callable value prepares the folder itself).
    """

    id: str
    argv: tuple[str, ...]
    fragments: tuple[str, ...]
    files: dict = field(default_factory=dict)


def case(id, argv, fragments, files=None):
    return Case(
        id,
        tuple(argv.split()) if isinstance(argv, str) else tuple(argv),
        tuple(fragments),
        files or {},
    )


HEADER = "participant,sketch_id,image_id,phase,rating,rt,anchor_rating,trial\n"
ROW = "01,s1,a,main,2,1.2,n/a,1\n01,s1,b,main,5,0.9,n/a,2\n"
GT = "sketch_id,image_id,mean_rating\ns01,s01_i01,2.0\ns01,s01_i02,5.5\n"
TSV = "participant\tsketch_id\timage_id\tphase\trating\n"


def png_declaring(width: int, height: int) -> bytes:
    """A few hundred bytes of PNG whose header declares width x height pixels."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = width.to_bytes(4, "big") + height.to_bytes(4, "big") + bytes([1, 0, 0, 0, 0])
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(bytes(4096)))
        + chunk(b"IEND", b"")
    )


# --- preparing a case's folder ------------------------------------------------------------


def set_copy(change, *, resum: bool = True):
    """A copy of the world's set, changed by ``change(folder)``; with ``resum`` the
    manifest's checksum is made right again, so that the change is the only problem."""

    def prepare(folder: Path, world: Path) -> None:
        target = folder / "set"
        shutil.copytree(world / "set", target, symlinks=True)
        change(target)
        if resum:
            digest = hashlib.sha256((target / "manifest.csv").read_bytes()).hexdigest()
            lines = (target / "SHA256SUMS").read_text().splitlines()
            lines = [
                f"{digest}  manifest.csv" if line.endswith("  manifest.csv") else line
                for line in lines
            ]
            (target / "SHA256SUMS").write_text("\n".join(lines) + "\n")

    return prepare


def recolour(path: Path) -> None:
    """Still a good image, but not the one SHA256SUMS lists."""
    with Image.open(path) as image:
        size, kind = image.size, image.format
    Image.new("RGB", size, (200, 10, 10)).save(path, format=kind)


def imported(change=None):
    """A lab folder that ``stimuli import`` has made a set of."""

    def prepare(folder: Path, world: Path) -> None:
        from sbir_study.stimuli import AnchorDesign, import_set

        lab_folder(change)(folder, world)
        import_set(folder / "lab", anchors=AnchorDesign(sketches=0))

    return prepare


def manifest_cell(row: int, column: str, value: str):
    def change(folder: Path) -> None:
        lines = (folder / "manifest.csv").read_text().splitlines()
        header = lines[0].split(",")
        cells = lines[row].split(",")
        cells[header.index(column)] = value
        lines[row] = ",".join(cells)
        (folder / "manifest.csv").write_text("\n".join(lines) + "\n")

    return change


def image_of(folder: Path, row: int = -1) -> Path:
    return folder / (folder / "manifest.csv").read_text().splitlines()[row].split(",")[3]


def bids(files: dict[str, str], description: bool = True):
    def prepare(folder: Path, world: Path) -> None:
        root = folder / "data"
        root.mkdir()
        if description:
            (root / "dataset_description.json").write_text('{"Name": "lab", "BIDSVersion": "1.9"}')
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text)

    return prepare


def lab_folder(change=None):
    """A lab's own images laid out for ``stimuli import``."""

    def prepare(folder: Path, world: Path) -> None:
        lab = folder / "lab"
        for sketch in ("duck", "boat"):
            (lab / "sketches").mkdir(parents=True, exist_ok=True)
            Image.new("L", (12, 9), 255).save(lab / "sketches" / f"{sketch}.png")
            (lab / "images" / sketch).mkdir(parents=True)
            for k in range(3):
                Image.new("RGB", (12, 9), (k, 9, 9)).save(lab / "images" / sketch / f"{k}.png")
        if change:
            change(lab)

    return prepare


def hpatches(change):
    def prepare(folder: Path, world: Path) -> None:
        shutil.copytree(HPATCHES / "benchmarks", folder / "benchmarks")
        shutil.copytree(HPATCHES / "results" / "desc_a", folder / "results")
        change(folder)

    return prepare


def edit_line(path: str, number: int, text: str | None):
    def change(folder: Path) -> None:
        lines = (folder / path).read_text().splitlines()
        if text is None:
            del lines[number - 1]
        else:
            lines[number - 1] = text
        (folder / path).write_text("\n".join(lines) + "\n")

    return change


def first_line_twice(folder: Path, world: Path) -> None:
    first = (world / "runs" / "l1.run").read_text().splitlines()[0]
    (folder / "r.run").write_text(f"{first}\n{first}\n")


def make_folder(folder: Path, world: Path) -> None:
    (folder / "dir.run").mkdir()
    (folder / "dir.csv").mkdir()


SIM = "simulate --participants 2 --sketches 2 --images 3 --anchor-sketches 0"
RUNS = "{W}/runs/l1.run"
EVAL = "evaluate --ground-truth {W}/analysis/ground_truth.csv"
RUN_ARGS = "run --protocol {W}/protocols/demo.toml --stimuli {W}/set --participant 07 --data"

CASES = [
    # --- the command line itself ---------------------------------------------------------
    case("no-subcommand", "", ["required", "SUBCOMMAND"]),
    case(
        "unknown-subcommand", "analyse x", ["invalid choice: 'analyse'", "did you mean 'analyze'"]
    ),
    case("unknown-action", "stimuli genrate", ["'genrate'", "did you mean 'generate'"]),
    case(
        "abbreviated-option",
        "analyze {W}/data --out {C}/o --part 3",
        ["unrecognized option '--part'", "did you mean '--pairwise'"],
    ),
    case(
        "abbreviated-flag",
        "analyze {W}/data --out {C}/o --no-fig",
        ["'--no-fig'", "did you mean '--no-figures'"],
    ),
    case(
        "misspelled-option",
        "simulate --out {C}/o --partcipants 3",
        ["'--partcipants'", "did you mean '--participants'"],
    ),
    case("extra-argument", "analyze {W}/data extra --out {C}/o", ["unexpected argument 'extra'"]),
    case("missing-out", "analyze {W}/data", ["required: --out"]),
    # --- analyze: ratings tables ---------------------------------------------------------
    case("ratings-missing", "analyze {C}/none.csv --out {C}/o", ["{C}/none.csv", "no such file"]),
    case("ratings-empty", "analyze {C}/r.csv --out {C}/o", ["{C}/r.csv", "empty"], {"r.csv": ""}),
    case(
        "ratings-no-column",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 1", "missing column 'image_id'"],
        {"r.csv": "participant,sketch_id,rating\n01,s1,2\n"},
    ),
    case(
        "ratings-out-of-scale",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 4", "'rating'", "'8'"],
        {"r.csv": HEADER + ROW + "01,s1,c,main,8,1,n/a,3\n"},
    ),
    case(
        "ratings-half",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'3.5'"],
        {"r.csv": HEADER + "01,s1,a,main,3.5,1,n/a,1\n"},
    ),
    case(
        "ratings-twice",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 4", "twice"],
        {"r.csv": HEADER + ROW + "01,s1,a,main,3,1,n/a,3\n"},
    ),
    case(
        "ratings-short-row",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 3", "expected 8 fields"],
        {"r.csv": HEADER + "01,s1,a,main,2,1,n/a,1\n01,s1,b\n"},
    ),
    case(
        "ratings-not-utf8",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 3", "not UTF-8"],
        {
            "r.csv": (HEADER + "01,s1,a,main,2,1,n/a,1\n").encode()
            + b"01,s1,caf\xe9,main,3,1,n/a,2\n"
        },
    ),
    case(
        "ratings-cr-only",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 3", "'rating'", "'9'"],
        {
            "r.csv": (HEADER + "01,s1,a,main,2,1,n/a,1\n01,s1,b,main,9,1,n/a,2\n").replace(
                "\n", "\r"
            )
        },
    ),
    case(
        "ratings-crlf-phase",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'phase'", "'final'"],
        {"r.csv": (HEADER + "01,s1,a,final,2,1,n/a,1\n").replace("\n", "\r\n")},
    ),
    case(
        "id-space",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 3", "'sketch_id'", "'s 1'"],
        {"r.csv": HEADER + '01,s1,a,main,2,1,n/a,1\n01,"s 1",b,main,3,1,n/a,2\n'},
    ),
    case(
        "id-tab",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'image_id'", "'a\\tb'"],
        {"r.csv": HEADER + '01,s1,"a\tb",main,2,1,n/a,1\n'},
    ),
    case(
        "id-newline",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'image_id'", "'a\\nb'"],
        {"r.csv": HEADER + '01,s1,"a\nb",main,2,1,n/a,1\n'},
    ),
    case(
        "id-nul",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'sketch_id'", "\\x00"],
        {"r.csv": HEADER + "01,s\x001,a,main,2,1,n/a,1\n"},
    ),
    case(
        "id-dotdot",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'image_id'", "'../x'"],
        {"r.csv": HEADER + "01,s1,../x,main,2,1,n/a,1\n"},
    ),
    case(
        "id-leading-dot",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'.hidden'"],
        {"r.csv": HEADER + "01,s1,.hidden,main,2,1,n/a,1\n"},
    ),
    case(
        "participant-not-bids",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'participant'", "BIDS label", "'P-1'"],
        {"r.csv": HEADER + "P-1,s1,a,main,2,1,n/a,1\n"},
    ),
    case(
        "participant-space",
        "analyze {C}/r.csv --out {C}/o",
        ["{C}/r.csv: line 2", "'0 1'"],
        {"r.csv": HEADER + "0 1,s1,a,main,2,1,n/a,1\n"},
    ),
    # --- analyze: BIDS datasets ----------------------------------------------------------
    case(
        "bids-empty",
        "analyze {C}/data --out {C}/o",
        ["{C}/data", "no sub-*/beh/*_beh.tsv"],
        bids({}),
    ),
    case(
        "bids-wrong-folder",
        "analyze {C}/data --out {C}/o",
        ["{C}/data/sub-01/beh/sub-02_task-x_beh.tsv", "participant '02'", "sub-01/"],
        bids({"sub-01/beh/sub-02_task-x_beh.tsv": TSV + "02\ts1\ta\tmain\t2\n"}),
    ),
    case(
        "bids-not-sub",
        "analyze {C}/data --out {C}/o",
        ["{C}/data/sub-01/beh/notes_beh.tsv", "sub-<label>_"],
        bids({"sub-01/beh/notes_beh.tsv": TSV + "01\ts1\ta\tmain\t2\n"}),
    ),
    case(
        "bids-contradicting",
        "analyze {C}/data --out {C}/o",
        ["{C}/data/sub-02/beh/sub-02_task-x_beh.tsv: line 2", "'participant'", "expected '02'"],
        bids(
            {
                "sub-01/beh/sub-01_task-x_beh.tsv": TSV + "01\ts1\ta\tmain\t2\n",
                "sub-02/beh/sub-02_task-x_beh.tsv": "rating\tparticipant\tsketch_id\timage_id\n"
                "3\t01\ts1\ta\n",
            }
        ),
    ),
    case(
        "bids-empty-file",
        "analyze {C}/data --out {C}/o",
        ["{C}/data/sub-01/beh/sub-01_task-x_beh.tsv", "empty"],
        bids({"sub-01/beh/sub-01_task-x_beh.tsv": ""}),
    ),
    case(
        "bids-bad-label",
        "analyze {C}/data --out {C}/o",
        ["sub-a.b_task-x_beh.tsv", "sub-<label>_"],
        bids({"sub-a.b/beh/sub-a.b_task-x_beh.tsv": TSV + "01\ts1\ta\tmain\t2\n"}),
    ),
    # --- analyze: where it writes --------------------------------------------------------
    case(
        "out-is-file",
        "analyze {W}/data --out {C}/f",
        ["{C}/f", "is a file; expected a folder"],
        {"f": "x"},
    ),
    case(
        "out-under-file",
        "analyze {W}/data --out {C}/f/o",
        ["{C}/f/o", "is a file, not a folder"],
        {"f": "x"},
    ),
    case(
        "out-own-no-overwrite",
        "analyze {W}/data --out {W}/analysis",
        ["{W}/analysis", "pass --overwrite"],
    ),
    case(
        "out-is-dataset",
        "analyze {W}/data --out {W}/data --overwrite",
        ["{W}/data", "holds the input"],
    ),
    case(
        "out-inside-dataset",
        "analyze {W}/data --out {W}/data/results",
        ["{W}/data/results", "inside the input folder"],
    ),
    case(
        "out-inside-simulated",
        "analyze {W}/ratings.csv --out {W}/data/results",
        ["{W}/data/results", "the output of sbir-study simulate (a BIDS dataset)"],
    ),
    case(
        "out-inside-lab-dataset",
        "analyze {W}/ratings.csv --out {C}/data/results",
        ["{C}/data/results", "is inside {C}/data, a BIDS dataset"],
        bids({"sub-01/beh/sub-01_task-x_beh.tsv": TSV + "01\ts1\ta\tmain\t2\n"}),
    ),
    case(
        "out-is-generated-set",
        "analyze {W}/data --out {W}/set --overwrite",
        ["{W}/set", "the output of sbir-study stimuli generate"],
    ),
    case(
        "out-is-imported-set",
        "analyze {W}/data --out {C}/lab --overwrite",
        ["{C}/lab", "is a stimulus set", "never overwritten"],
        imported(),
    ),
    case(
        "out-is-evaluation",
        "analyze {W}/data --out {W}/evaluation --overwrite",
        ["{W}/evaluation", "the output of sbir-study evaluate"],
    ),
    case("out-is-cwd", "analyze {W}/data --out . --overwrite", [".", "current folder"]),
    case("out-is-world", "analyze {W}/data --out {W} --overwrite", ["{W}", "current folder"]),
    case(
        "out-holds-data",
        "analyze {C}/data --out {C} --overwrite",
        ["{C}", "holds the input {C}/data"],
        bids({"sub-01/beh/sub-01_task-x_beh.tsv": TSV + "01\ts1\ta\tmain\t2\n"}),
    ),
    case(
        "out-foreign-files",
        "analyze {W}/data --out {C}/results --overwrite",
        ["{C}/results", "did not write", "notes.txt"],
        {"results/notes.txt": "mine"},
    ),
    case(
        "out-own-with-user-file",
        "analyze {W}/data --out {W}/analysis-notes --overwrite",
        ["{W}/analysis-notes", "holds my-notes.txt, which sbir-study analyze did not write"],
    ),
    case(
        "out-name-too-long",
        ["analyze", "{W}/data", "--out", "{C}/" + "n" * 300],
        ["bytes long", "File name too long"],
    ),
    case(
        "out-symlink",
        "analyze {W}/data --out {C}/link",
        ["{C}/link", "symbolic link"],
        lambda c, w: (c / "link").symlink_to(w / "analysis"),
    ),
    case(
        "alpha-above-one", "analyze {W}/data --out {C}/o --alpha 2", ["--alpha", "between 0 and 1"]
    ),
    case("alpha-text", "analyze {W}/data --out {C}/o --alpha high", ["--alpha", "'high'"]),
    case("alternative", "analyze {W}/data --out {C}/o --alternative up", ["--alternative", "'up'"]),
    case(
        "pairwise",
        "analyze {W}/data --out {C}/o --pairwise ful",
        ["--pairwise", "did you mean 'full'"],
    ),
    case(
        "pilot-missing",
        "analyze {W}/data --out {C}/o --pilot {C}/pilot.csv",
        ["{C}/pilot.csv", "no such file"],
    ),
    # --- stimulus sets, wherever they are read -------------------------------------------
    case(
        "stimuli-missing",
        "analyze {W}/data --out {C}/o --stimuli {C}/none",
        ["{C}/none", "no such folder; expected a stimulus set"],
    ),
    case(
        "stimuli-dotdot",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        ["{C}/set/manifest.csv: line 2", "image_path '../outside.png'", "without '..'"],
        set_copy(manifest_cell(1, "image_path", "../outside.png")),
    ),
    case(
        "stimuli-absolute",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        ["{C}/set/manifest.csv: line 3", "not an absolute path"],
        set_copy(manifest_cell(2, "image_path", "/etc/hostname")),
    ),
    case(
        "stimuli-symlink-out",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        ["outside the set folder"],
        set_copy(
            lambda s: (
                (s / "sketches" / "a01.png").unlink()
                or (s / "sketches" / "a01.png").symlink_to("/etc/hostname")
            )
        ),
    ),
    case(
        "stimuli-checksum",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        ["{C}/set/images/s03/s03_i06.jpg: checksum mismatch"],
        set_copy(lambda s: recolour(image_of(s)), resum=False),
    ),
    case(
        "stimuli-unreadable",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        [
            "{C}/set/images/s03/s03_i06.jpg: cannot be read as an image (cannot identify image file)",
            "manifest line 40",
        ],
        set_copy(lambda s: image_of(s).write_bytes(b"not an image")),
    ),
    case(
        "stimuli-bomb",
        "analyze {W}/data --out {C}/o --stimuli {C}/set",
        ["declares 100,000,000 pixels", "decompression bomb"],
        set_copy(lambda s: image_of(s).write_bytes(png_declaring(10_000, 10_000))),
    ),
    case(
        "stimuli-no-sums",
        "simulate --stimuli {C}/set --out {C}/o",
        ["{C}/set/SHA256SUMS", "no such file"],
        set_copy(lambda s: (s / "SHA256SUMS").unlink(), resum=False),
    ),
    case(
        "stimuli-bad-id",
        "baseline --stimuli {C}/set --distance l1 --out {C}/o",
        ["{C}/set/manifest.csv: line 2", "sketch_id 'a 01'"],
        set_copy(manifest_cell(1, "sketch_id", "a 01")),
    ),
    case(
        "stimuli-bomb-baseline",
        "baseline --stimuli {C}/set --distance l1 --out {C}/o",
        ["declares", "pixels"],
        set_copy(lambda s: image_of(s).write_bytes(png_declaring(9000, 9000))),
    ),
    # --- simulate ------------------------------------------------------------------------
    case(
        "sim-recorded",
        SIM + " --out {C}/data --overwrite",
        ["{C}/data", "a BIDS dataset", "never overwritten"],
        bids(
            {
                "sub-99/beh/sub-99_task-x_beh.tsv": TSV + "99\ts1\ta\tmain\t2\n",
                "code/run.py": "#",
                "README": "the lab's notes",
            }
        ),
    ),
    case(
        "sim-own-plus-participant",
        SIM + " --out {W}/sim-plus --overwrite",
        [
            "{W}/sim-plus",
            "holds sub-99/beh/sub-99_task-x_beh.tsv, which sbir-study simulate did not write",
        ],
    ),
    case("sim-cwd", SIM + " --out . --overwrite", ["current folder"]),
    case("sim-own-no-overwrite", SIM + " --out {W}/data", ["{W}/data", "pass --overwrite"]),
    case(
        "sim-flat-foreign",
        SIM + " --flat --out {C}/r.csv --overwrite",
        ["{C}/r.csv", "did not write it", "never overwritten"],
        {"r.csv": "someone's table\n"},
    ),
    case(
        "sim-flat-foreign-sidecar",
        SIM + " --flat --out {C}/r.csv",
        ["{C}/r.json", "did not write it"],
        {"r.json": '{"someone": "else"}'},
    ),
    case(
        "sim-flat-json", SIM + " --flat --out {C}/r.json", ["--out", "{C}/r.json", ".csv or .tsv"]
    ),
    case(
        "sim-flat-in-set",
        SIM + " --flat --out {W}/set/r.csv",
        ["{W}/set/r.csv", "(a stimulus set)"],
    ),
    case("sim-in-analysis", SIM + " --out {W}/analysis/sim", ["the output of sbir-study analyze"]),
    case("sim-seed-negative", "simulate --out {C}/o --seed -1", ["--seed", ">= 0", "-1"]),
    case(
        "sim-participants-zero", "simulate --out {C}/o --participants 0", ["--participants", ">= 1"]
    ),
    case("sim-miss-rate", "simulate --out {C}/o --miss-rate 1.5", ["--miss-rate", "1.5"]),
    case("sim-miss-rate-nan", "simulate --out {C}/o --miss-rate nan", ["--miss-rate", "nan"]),
    case(
        "sim-set-and-sketches",
        "simulate --stimuli {W}/set --sketches 3 --out {C}/o",
        ["--sketches", "the stimulus set fixes the design"],
    ),
    case("sim-sketches-text", "simulate --out {C}/o --sketches many", ["--sketches", "'many'"]),
    # --- evaluate: ground truths ---------------------------------------------------------
    case(
        "gt-missing",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv", "no such file"],
    ),
    case(
        "gt-folder",
        "evaluate --ground-truth {C} " + RUNS + " --out {W}/cases/gt-folder-out",
        ["{C}", "is a folder"],
    ),
    case(
        "gt-no-column",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv", "missing column 'mean_rating'"],
        {"gt.csv": "sketch_id,image_id\ns01,a\n"},
    ),
    case(
        "gt-bad-mean",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 3", "mean_rating", "'9'"],
        {"gt.csv": "sketch_id,image_id,mean_rating\ns,a,2\ns,b,9\n"},
    ),
    case(
        "gt-id-space",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 2", "sketch_id", "'s 01'"],
        {"gt.csv": 'sketch_id,image_id,mean_rating\n"s 01",a,2\n'},
    ),
    case(
        "gt-id-newline",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 2", "image_id", "'a\\nb'"],
        {"gt.csv": 'sketch_id,image_id,mean_rating\ns01,"a\nb",2\n'},
    ),
    case(
        "gt-twice",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 4", "listed again", "line 2"],
        {"gt.csv": GT + "s01,s01_i01,3\n"},
    ),
    case(
        "gt-cr-only",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 3", "mean_rating", "'x'"],
        {"gt.csv": "sketch_id,image_id,mean_rating\rs,a,2\rs,b,x\r"},
    ),
    case(
        "gt-extra-field",
        "evaluate --ground-truth {C}/gt.csv " + RUNS + " --out {C}/o",
        ["{C}/gt.csv, line 3", "expected 3 fields, found 4"],
        {"gt.csv": GT.replace("5.5", "5.5,1")},
    ),
    # --- evaluate: runs ------------------------------------------------------------------
    case("run-missing", EVAL + " {C}/none.run --out {C}/o", ["{C}/none.run", "no such file"]),
    case(
        "run-folder", EVAL + " {C}/dir.run --out {C}/o", ["{C}/dir.run", "is a folder"], make_folder
    ),
    case(
        "run-fields",
        EVAL + " {C}/r.run --out {C}/o",
        ["{C}/r.run, line 2", "5 fields; expected 6"],
        {"r.run": "s01 Q0 a 1 0.5 t\ns01 Q0 b 2 0.4\n"},
    ),
    case(
        "run-score",
        EVAL + " {C}/r.run --out {C}/o",
        ["{C}/r.run, line 1", "score", "'high'"],
        {"r.run": "s01 Q0 a 1 high t\n"},
    ),
    case(
        "run-table-column",
        EVAL + " {C}/r.csv --out {C}/o",
        ["{C}/r.csv, line 1", "missing column 'score'"],
        {"r.csv": "sketch_id,image_id,distance\ns01,a,1\n"},
    ),
    case(
        "run-id-space",
        EVAL + " {C}/r.tsv --out {C}/o",
        ["{C}/r.tsv, line 3", "image_id", "'a b'"],
        {"r.tsv": "sketch_id\timage_id\tscore\ns01\tx\t1\ns01\ta b\t0.5\n"},
    ),
    case(
        "run-unknown-sketch",
        EVAL + " {C}/r.run --out {C}/o",
        ["{C}/r.run, line 1", "'zz'", "not in the ground truth"],
        {"r.run": "zz Q0 a 1 0.5 t\n"},
    ),
    case(
        "run-twice",
        EVAL + " {C}/r.run --out {C}/o",
        ["{C}/r.run, line 2", "listed again", "line 1"],
        first_line_twice,
    ),
    case(
        "run-not-utf8",
        EVAL + " {C}/r.run --out {C}/o",
        ["{C}/r.run, line 2", "not UTF-8"],
        {"r.run": b"s01 Q0 a 1 0.5 t\ns01 Q0 \xff 2 0.4 t\n"},
    ),
    case("run-empty", EVAL + " {C}/r.run --out {C}/o", ["{C}/r.run", "empty"], {"r.run": ""}),
    case(
        "eval-out-analysis",
        EVAL + " " + RUNS + " --out {W}/analysis-notes --overwrite",
        [
            "{W}/analysis-notes",
            "the output of sbir-study analyze",
            "never overwritten by sbir-study evaluate",
        ],
    ),
    case(
        "eval-out-holds-truth",
        EVAL + " " + RUNS + " --out {W}/analysis --overwrite",
        ["{W}/analysis", "holds the input {W}/analysis/ground_truth.csv"],
    ),
    case(
        "eval-out-holds-run",
        EVAL + " " + RUNS + " --out {W}/runs --overwrite",
        ["{W}/runs", "holds the input"],
    ),
    case(
        "eval-own-no-overwrite",
        EVAL + " " + RUNS + " --out {W}/evaluation",
        ["{W}/evaluation", "pass --overwrite"],
    ),
    case(
        "eval-wrong-ratings",
        EVAL + " " + RUNS + " --out {C}/o --ratings {W}/ratings.csv",
        ["{W}/ratings.csv: the pair", "expected the ratings the ground truth was computed from"],
    ),
    case(
        "eval-names",
        EVAL + " " + RUNS + " --out {C}/o --name a --name b",
        ["--name", "given 2 times for 1 runs"],
    ),
    case("eval-human", EVAL + " " + RUNS + " --out {C}/o --name human", ["'human'", "reserved"]),
    case(
        "eval-relevant",
        EVAL + " " + RUNS + " --out {C}/o --relevant-below 9",
        ["--relevant-below", "9"],
    ),
    case(
        "eval-cutoffs", EVAL + " " + RUNS + " --out {C}/o --cutoffs 0", ["--cutoffs", "at least 1"]
    ),
    case(
        "eval-bootstrap",
        EVAL + " " + RUNS + " --out {C}/o --bootstrap 5",
        ["--bootstrap", ">= 100"],
    ),
    # --- evaluate-hpatches ---------------------------------------------------------------
    case(
        "hp-no-benchmarks",
        "evaluate-hpatches {C}/none {C}/results",
        ["{C}/none", "not a folder"],
        hpatches(lambda c: None),
    ),
    case(
        "hp-pool",
        "evaluate-hpatches {C}/benchmarks {C}/results",
        ["{C}/results/tiny_easy_2s_00.results, line 1", "pool"],
        hpatches(edit_line("results/tiny_easy_2s_00.results", 1, "i_a.ref,i_a.e1")),
    ),
    case(
        "hp-entries",
        "evaluate-hpatches {C}/benchmarks {C}/results --top 5",
        ["{C}/results/tiny_easy_2s_00.results, line 3", "entries"],
        hpatches(edit_line("results/tiny_easy_2s_00.results", 3, "v_b.ref.7, i_a.ref.1")),
    ),
    case(
        "hp-labels",
        "evaluate-hpatches {C}/benchmarks {C}/results",
        ["{C}/benchmarks/tiny_easy_2s_00.labels", "missing"],
        hpatches(lambda c: (c / "benchmarks" / "tiny_easy_2s_00.labels").unlink()),
    ),
    case(
        "hp-not-utf8",
        "evaluate-hpatches {C}/benchmarks {C}/results",
        ["{C}/benchmarks/tiny_easy_2s_00.benchmark", "not UTF-8"],
        hpatches(lambda c: (c / "benchmarks" / "tiny_easy_2s_00.benchmark").write_bytes(b"\xff\n")),
    ),
    case("hp-top", "evaluate-hpatches {C}/b {C}/r --top 0", ["--top", ">= 1"]),
    case(
        "hp-out-input",
        "evaluate-hpatches {C}/benchmarks {C}/results --out {C}/benchmarks --overwrite",
        ["{C}/benchmarks", "holds the input"],
        hpatches(lambda c: None),
    ),
    case(
        "hp-overwrite-no-out",
        "evaluate-hpatches {C}/b {C}/r --overwrite",
        ["--overwrite", "no --out"],
    ),
    # --- baseline ------------------------------------------------------------------------
    case(
        "base-distance-empty",
        ["baseline", "--stimuli", "{W}/set", "--distance", "", "--out", "{C}/o"],
        ["--distance", "''"],
    ),
    case(
        "base-distance-typo",
        "baseline --stimuli {W}/set --distance cosin --out {C}/o",
        ["cosin", "did you mean 'cosine'"],
    ),
    case(
        "base-out-foreign",
        "baseline --stimuli {W}/set --distance l1 --out {C}/r.run --overwrite",
        ["{C}/r.run", "did not write it"],
        {"r.run": "someone's run\n"},
    ),
    case(
        "base-out-in-set",
        "baseline --stimuli {W}/set --distance l1,l2 --out {W}/set/runs",
        ["{W}/set/runs", "inside the input folder"],
    ),
    case(
        "base-collection",
        "baseline --stimuli {W}/set --distance l1 --out {C}/o --collection every",
        ["--collection", "'every'"],
    ),
    case(
        "base-own-no-overwrite",
        "baseline --stimuli {W}/set --distance l1,chi2 --out {W}/runs",
        ["{W}/runs", "pass --overwrite"],
    ),
    # --- power ---------------------------------------------------------------------------
    case(
        "power-participants",
        "power --out {C}/o --participants 1,5",
        ["--participants", "at least 2"],
    ),
    case(
        "power-out-foreign",
        "power --out {C}/p --overwrite",
        ["{C}/p", "did not write"],
        {"p/x.csv": "1"},
    ),
    case("power-replications", "power --out {C}/o --replications 0", ["--replications", ">= 1"]),
    case("power-jobs", "power --out {C}/o --jobs 0", ["--jobs", ">= 1"]),
    case(
        "power-out-is-data", "power --out {W}/data --overwrite", ["{W}/data", "never overwritten"]
    ),
    # --- stimuli validate / generate / import / select -----------------------------------
    case("validate-missing", "stimuli validate {C}/none", ["{C}/none", "no such folder"]),
    case(
        "validate-bad-id",
        "stimuli validate {C}/set",
        ["{C}/set/manifest.csv: line 40", "image_id 's03 i06'"],
        set_copy(manifest_cell(-1, "image_id", "s03 i06")),
    ),
    case(
        "validate-duplicate",
        "stimuli validate {C}/set",
        ["{C}/set/manifest.csv: line 41", "duplicate pair (s03, s03_i06); first on line 40"],
        set_copy(
            lambda s: (s / "manifest.csv").write_text(
                (s / "manifest.csv").read_text()
                + (s / "manifest.csv").read_text().splitlines()[-1]
                + "\n"
            )
        ),
    ),
    case("generate-exists", "stimuli generate --out {W}/set", ["{W}/set", "pass --overwrite"]),
    case(
        "generate-into-data",
        "stimuli generate --out {W}/data --overwrite",
        ["{W}/data", "never overwritten"],
    ),
    case(
        "generate-width", "stimuli generate --out {C}/o --width 10", ["--width", "64..4096", "10"]
    ),
    case(
        "generate-images",
        "stimuli generate --out {C}/o --images 1",
        ["--images", "2..10000", "'1'"],
    ),
    case(
        "generate-anchor-images",
        "stimuli generate --out {C}/o --anchor-images 9",
        ["--anchor-images", "2..7", "9"],
    ),
    case("import-missing", "stimuli import {C}/none", ["{C}/none", "no such folder"]),
    case(
        "import-space",
        "stimuli import {C}/lab --anchor-sketches 0",
        ["{C}/lab/images/duck/a b.png", "file name"],
        lab_folder(lambda lab: Image.new("L", (4, 4)).save(lab / "images" / "duck" / "a b.png")),
    ),
    case(
        "import-bomb",
        "stimuli import {C}/lab --anchor-sketches 0",
        ["{C}/lab/images/boat/2.png", "declares", "nothing was written"],
        lab_folder(
            lambda lab: (lab / "images" / "boat" / "2.png").write_bytes(png_declaring(9000, 9000))
        ),
    ),
    case(
        "import-anchor-rating",
        "stimuli import {C}/lab --anchor-sketches 1",
        ["{C}/lab/anchors.csv: line 2", "anchor_rating '10'", "1..9"],
        lab_folder(
            lambda lab: (lab / "anchors.csv").write_text(
                "sketch_id,image_id,anchor_rating\nduck,0,10\n"
            )
        ),
    ),
    case(
        "import-over-generated",
        "stimuli import {C}/set --overwrite",
        ["{C}/set/manifest.csv", "did not write it", "never overwritten"],
        set_copy(lambda s: None),
    ),
    case(
        "import-again",
        "stimuli import {C}/lab",
        ["{C}/lab/manifest.csv", "pass --overwrite"],
        imported(),
    ),
    case(
        "import-generated", "stimuli import {W}/set", ["{W}/set/manifest.csv", "did not write it"]
    ),
    case(
        "select-no-pool",
        "stimuli select {C}/none {W}/ratings.csv --out {C}/o",
        ["{C}/none", "no such folder"],
    ),
    case(
        "select-no-pilot",
        "stimuli select {W}/set {C}/none.csv --out {C}/o",
        ["{C}/none.csv", "no such file"],
    ),
    case(
        "select-out-foreign",
        "stimuli select {W}/set {W}/ratings.csv --out {C}/o --overwrite",
        ["{C}/o", "did not write"],
        {"o/mine.txt": "x"},
    ),
    # --- run: everything checked before a window opens ----------------------------------
    case(
        "run-protocol-missing",
        "run --protocol {C}/p.toml --stimuli {W}/set --participant 07 --data {C}/d",
        ["{C}/p.toml", "no such file"],
    ),
    case(
        "run-protocol-key",
        "run --protocol {C}/p.toml --stimuli {W}/set --participant 07 --data {C}/d",
        ["{C}/p.toml", "unknown key 'timing.stimuls_s'", "did you mean 'timing.stimulus_s'"],
        {"p.toml": "[timing]\nstimuls_s = 2.0\n"},
    ),
    case(
        "run-protocol-toml",
        "run --protocol {C}/p.toml --stimuli {W}/set --participant 07 --data {C}/d",
        ["{C}/p.toml", "not valid TOML"],
        {"p.toml": "[timing\n"},
    ),
    case(
        "run-protocol-folder",
        "run --protocol {C} --stimuli {W}/set --participant 07 --data {C}/d",
        ["{C}", "is a folder; expected a protocol (.toml)"],
    ),
    case(
        "run-set-checksum",
        "run --protocol {W}/protocols/demo.toml --stimuli {C}/set --participant 07 --data {C}/d",
        ["{C}/set/images/s03/s03_i06.jpg: checksum mismatch"],
        set_copy(lambda s: recolour(image_of(s)), resum=False),
    ),
    # Any id a platform sends becomes a label ("0 7" is 07, "../x" is x); only an id that is
    # no id at all is refused, before a window opens.
    case(
        "run-participant-blank",
        [
            "run",
            "--protocol",
            "{W}/protocols/demo.toml",
            "--stimuli",
            "{W}/set",
            "--participant",
            "   ",
            "--data",
            "{C}/d",
        ],
        ["--participant", "not only spaces", "'   '"],
    ),
    case(
        "run-participant-control",
        [
            "run",
            "--protocol",
            "{W}/protocols/demo.toml",
            "--stimuli",
            "{W}/set",
            "--participant",
            "0\t7",
            "--data",
            "{C}/d",
        ],
        ["--participant", "no control characters"],
    ),
    case("run-data-file", RUN_ARGS + " {C}/d", ["{C}/d", "is a file"], {"d": "x"}),
    case("run-data-set", RUN_ARGS + " {W}/set", ["{W}/set", "a stimulus set"]),
    case(
        "run-data-in-analysis",
        RUN_ARGS + " {W}/analysis/sessions",
        ["{W}/analysis/sessions", "the output of sbir-study analyze"],
    ),
    case(
        "run-data-simulated",
        RUN_ARGS + " {W}/data",
        ["{W}/data", "the output of sbir-study simulate"],
    ),
    case("run-resume-seed", RUN_ARGS + " {C}/d --resume --seed 3", ["--seed", "drop --seed"]),
]


# --- the world -----------------------------------------------------------------------------

#: The cases run as a user runs them, through the installed script in a fresh process: one
#: of each command family a user meets first (analyze, evaluate, stimuli, run) and the
#: parser's own exit. Every other case runs in this process through ``sbir_study.cli.main``,
#: which gives the same exit status and line without starting an interpreter.
IN_A_PROCESS = ("no-subcommand", "out-is-cwd", "run-not-utf8", "import-bomb", "run-protocol-key")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "SBIR_STUDY_LOG_DIR": str(cwd.parent / "logs")}
    return subprocess.run(
        [*SBIR_STUDY, *args], capture_output=True, text=True, check=False, cwd=cwd, env=env
    )


def _in_this_process(*args: str, cwd: Path, capfd) -> subprocess.CompletedProcess:
    capfd.readouterr()
    result = run_main(*args, cwd=cwd, env={"SBIR_STUDY_LOG_DIR": str(cwd.parent / "logs")})
    # Nothing written past sys.stdout and sys.stderr (a library writing to the descriptors).
    assert capfd.readouterr() == ("", ""), "written to the file descriptors, not the streams"
    return result


def _expand(text: str, world: Path, folder: Path) -> str:
    return text.replace("{W}", str(world)).replace("{C}", str(folder))


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Real inputs and outputs of every command, and the files of every case."""
    from sbir_study.cli import main
    from sbir_study.stimuli import generate_set

    world = tmp_path_factory.mktemp("bad-inputs") / "world"
    world.mkdir()
    generate_set(world / "set", SMALL_SET, seed=7)
    shutil.copytree(ROOT / "protocols", world / "protocols")
    steps = [
        ["simulate", "--stimuli", f"{world}/set", "--participants", "4", "--out", f"{world}/data"],
        [
            "simulate",
            "--participants",
            "3",
            "--sketches",
            "2",
            "--images",
            "4",
            "--flat",
            "--out",
            f"{world}/ratings.csv",
        ],
        ["analyze", f"{world}/data", "--out", f"{world}/analysis", "--no-figures"],
        ["analyze", f"{world}/data", "--out", f"{world}/analysis-notes", "--no-figures"],
        [
            "baseline",
            "--stimuli",
            f"{world}/set",
            "--distance",
            "l1,chi2",
            "--out",
            f"{world}/runs",
        ],
        [
            "evaluate",
            "--ground-truth",
            f"{world}/analysis/ground_truth.csv",
            f"{world}/runs/l1.run",
            "--out",
            f"{world}/evaluation",
            "--no-figures",
            "--bootstrap",
            "100",
            "--permutations",
            "100",
        ],
        [
            "simulate",
            "--participants",
            "2",
            "--sketches",
            "2",
            "--images",
            "3",
            "--out",
            f"{world}/sim-plus",
        ],
    ]
    for step in steps:
        assert main(step) == 0, step
    (world / "analysis-notes" / "my-notes.txt").write_text("a note kept with the results")
    plus = world / "sim-plus" / "sub-99" / "beh" / "sub-99_task-x_beh.tsv"
    plus.parent.mkdir(parents=True)
    plus.write_text(TSV + "99\ts1\ta\tmain\t2\n")
    for entry in CASES:
        folder = world / "cases" / entry.id
        folder.mkdir(parents=True)
        if callable(entry.files):
            entry.files(folder, world)
            continue
        for name, content in entry.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_bytes(content.encode("utf-8"))
    return world


@pytest.fixture(scope="module")
def before(world):
    return snapshot(world)


def test_there_are_enough_cases():
    commands = {c.argv[0] for c in CASES if c.argv}
    assert len(CASES) >= 100
    assert {
        "analyze",
        "simulate",
        "evaluate",
        "evaluate-hpatches",
        "baseline",
        "power",
        "stimuli",
        "run",
    } <= commands
    assert len({c.id for c in CASES}) == len(CASES)
    assert set(IN_A_PROCESS) <= {c.id for c in CASES}


@pytest.mark.parametrize("entry", CASES, ids=[c.id for c in CASES])
def test_bad_input_is_one_line_and_touches_nothing(world, before, entry, capfd):
    folder = world / "cases" / entry.id
    argv = [_expand(a, world, folder) for a in entry.argv]
    if entry.id in IN_A_PROCESS:
        result = _cli(*argv, cwd=world)
    else:
        result = _in_this_process(*argv, cwd=world, capfd=capfd)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("sbir-study"), lines[0]
    assert "Traceback" not in result.stderr and "usage:" not in result.stderr
    for fragment in entry.fragments:
        assert _expand(fragment, world, folder) in lines[0], lines[0]
    assert snapshot(world) == before
