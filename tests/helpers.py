"""What many test modules use: the fixture data, the R reference tables, the command line."""

from __future__ import annotations

import datetime
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd

#: Small fixture files (tests/data/).
DATA = Path(__file__).parent / "data"
#: Tables written by tests/r/reference.R.
R_REFERENCE = DATA / "r_reference"
#: The checkout's root (protocols/, scripts/).
ROOT = Path(__file__).parents[1]


#: Folders of the repository that are not its source: the environments, outputs and caches
#: (some gigabytes), and pip's ``*.egg-info`` (:func:`not_source`).
NOT_SOURCE = frozenset(
    {
        ".git",
        ".venv",
        ".node",
        "build",
        "node_modules",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
        ".hypothesis",
    }
)


def not_source(name: str) -> bool:
    """Whether a folder of the repository so named holds no source (:data:`NOT_SOURCE`)."""
    return name in NOT_SOURCE or name.endswith(".egg-info")


def r_reference(name: str) -> pd.DataFrame:
    """A table written by tests/r/reference.R (R 4.2, base packages)."""
    return pd.read_csv(
        R_REFERENCE / name, dtype={"participant": str, "participant_a": str, "participant_b": str}
    )


#: The installed command, as a user runs it (the console script; ``python -P -m sbir_study``,
#: which keeps the working folder off the import path, where the script is missing).
SBIR_STUDY = [str(Path(sys.executable).with_name("sbir-study"))]
if not Path(SBIR_STUDY[0]).exists():
    SBIR_STUDY = [sys.executable, "-P", "-m", "sbir_study"]

#: Figures as PNG alone (``--figure-formats png``), for the tests that read the figures or
#: the report but not the PDFs, which the figure tests read (tests/analysis/
#: test_figures_report.py, test_figures_crowd.py, test_report_reads.py, retrieval/
#: test_figures.py): a PDF, its fonts embedded, takes about twice a PNG's time to write.
PNG = ("png",)
PNG_OPTION = ("--figure-formats", "png")


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root``: a file's SHA-256, a link's target, a folder's mark."""
    import hashlib
    import os

    entries = {}
    for base, folders, files in os.walk(root, followlinks=False):
        for name in folders + files:
            path = Path(base) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = "-> " + os.readlink(path)
            elif path.is_dir():
                entries[relative] = "folder"
            else:
                entries[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return entries


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """``sbir-study ARGS`` in a fresh process, as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "sbir_study", *args], capture_output=True, text=True, check=False
    )


def process_state() -> dict:
    """What a command run in this process could change and must leave as it found it: the
    working folder, the environment, signal handlers, warning filters, logging, the standard
    streams, threads, the umask (compare two with :func:`process_changes`)."""
    import logging
    import os
    import signal
    import threading
    import warnings

    handlers = {}
    for number in signal.valid_signals():
        try:
            handlers[number] = signal.getsignal(number)
        except (OSError, ValueError):
            continue
    loggers = {}
    for logger in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        if isinstance(logger, logging.Logger):  # not a placeholder of a dotted name
            handlers_of = [h for h in logger.handlers if not isinstance(h, logging.NullHandler)]
            loggers[logger.name] = (
                logging.getLevelName(logger.level),
                logger.propagate,
                logger.disabled,
                handlers_of,
            )
    umask = os.umask(0o022)
    os.umask(umask)
    return {
        "working folder": os.getcwd(),
        "environment": dict(os.environ),
        "signal handlers": handlers,
        "warning filters": (list(warnings.filters), warnings.showwarning),
        "loggers": loggers,
        "logging disabled below": logging.root.manager.disable,
        "streams": (sys.stdin, sys.stdout, sys.stderr),
        "threads": sorted((thread.name, thread.ident) for thread in threading.enumerate()),
        "umask": umask,
    }


def process_changes(before: dict, after: dict) -> list[str]:
    """What differs between two :func:`process_state`, each named with its old and new value.

    A logger first made in between with no handler of its own is no change: a module
    imported for the first time makes its logger, as it would in a fresh process. Of the
    threads, those left running that were not there before are changes; one that ended in
    between (a test's own client retiring an idle worker) is not the command's doing.
    """
    changes = []
    for key, old in before.items():
        new = after[key]
        if key == "threads":
            started = [name for name, ident in new if (name, ident) not in old]
            if started:
                changes.append(f"threads left running: {started!r}")
            continue
        if key == "loggers":
            new = {name: value for name, value in new.items() if name in old or value[3]}
        if key in ("environment", "signal handlers", "loggers"):
            names = sorted(set(old) | set(new), key=str)
            changes += [
                f"{key}: {name} {old.get(name)!r} -> {new.get(name)!r}"
                for name in names
                if old.get(name) != new.get(name)
            ]
        elif old != new:
            changes.append(f"{key}: {old!r} -> {new!r}")
    return changes


def run_main(*args: str | Path, cwd: Path | None = None, env: dict[str, str] | None = None):
    """``sbir-study ARGS`` in this process, through :func:`sbir_study.cli.main`.

    Gives what :func:`run_cli` gives for a fresh process (exit status, stdout, stderr, as a
    :class:`subprocess.CompletedProcess`) without starting an interpreter, for tests of what
    a command does rather than of the process it runs in. ``cwd`` and ``env`` (variables
    set on top of this process's) hold for the call only. A command that leaves this
    process changed (:func:`process_changes`) fails the test: the next call would not see
    what a fresh process sees.
    """
    import contextlib
    import io

    from sbir_study.cli import main
    from sbir_study.foundation.environment import environment_variables

    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext(),
        environment_variables(env or {}),
    ):
        before = process_state()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                status = main([str(arg) for arg in args])  # paths as the shell passes them
            except SystemExit as ended:  # argparse's own exit, as sys.exit(main()) ends
                code = ended.code
                status = code if isinstance(code, int) else 0 if code is None else 1
        after = process_state()
    changes = process_changes(before, after)
    assert not changes, f"sbir-study {' '.join(args)} left the process changed: {changes}"
    return subprocess.CompletedProcess(list(args), status, stdout.getvalue(), stderr.getvalue())


def assert_input_error(result: subprocess.CompletedProcess, *fragments: str) -> None:
    """Exit status 2 and exactly one line on stderr, naming what it should."""
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    for fragment in fragments:
        assert fragment in lines[0], lines[0]


def _small_set_design():
    from sbir_study.stimuli import SetDesign

    return SetDesign(sketches=3, images_per_sketch=6, width=96, height=72)


#: A small generated set: 3 sketches x 6 images and the paper's anchor block.
SMALL_SET = _small_set_design()

#: One HPatches task of three queries, checked by hand (tests/analysis/retrieval/test_hpatches.py).
HPATCHES = DATA / "hpatches"


def reads_or_refuses(read, *args, **kwargs):
    """``read(*args, **kwargs)``, or None when it refuses the input with an InputError.

    Any other exception fails the test: a reader meets bad bytes with one clear
    message, never a traceback. Warnings about the input are allowed.
    """
    import warnings

    from sbir_study.foundation.checks import InputError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return read(*args, **kwargs)
        except InputError as error:
            message = str(error)
            assert message and "\n" not in message.strip(), message
            return None


def table_bytes(tokens, *, separators=(",", "\t", " ")):
    """A hypothesis strategy of table-like bytes: lines of fields drawn from ``tokens`` and
    from arbitrary text, joined by separators, with every kind of line end, quotes, NULs,
    byte-order marks and invalid UTF-8 mixed in."""
    from hypothesis import strategies as st

    field = st.one_of(
        st.sampled_from(list(tokens)),
        st.text(max_size=6),
        st.sampled_from(
            [
                "",
                '"',
                '"a,b"',
                "n/a",
                "NaN",
                "inf",
                "-1",
                "1e309",
                "\x00",
                " ",
                "..",
                "../x",
                "a b",
                "é",
                "7.0",
                "2",
            ]
        ),
    )
    line = st.builds(
        lambda fields, sep: sep.join(fields),
        st.lists(field, max_size=9),
        st.sampled_from(separators),
    )
    text = st.builds(
        lambda lines, end, last: end.join(lines) + (end if last else ""),
        st.lists(line, max_size=8),
        st.sampled_from(["\n", "\r\n", "\r"]),
        st.booleans(),
    )
    encoded = text.map(lambda t: t.encode("utf-8", "surrogatepass"))
    return st.one_of(
        encoded,
        st.builds(
            lambda head, body: head + body, st.sampled_from([b"\xef\xbb\xbf", b"\xff\xfe"]), encoded
        ),
        st.binary(max_size=64),
        st.builds(lambda a, b: a + b"\xff" + b, encoded, encoded),
    )


def toml_value(value) -> str:
    """A Python value as TOML writes it, for protocol files the tests write.

    Examples
    --------
    >>> toml_value(["a", 1, 2.5, True, "Größe \\"x\\""])
    '["a", 1, 2.5, true, "Größe \\\\"x\\\\""]'
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return repr(value) if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        # A JSON string is a TOML basic string, once DEL (which JSON leaves raw) is escaped.
        return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007F")
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(toml_value, value)) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise TypeError(f"no TOML for {value!r}")


def toml_text(settings: dict) -> str:
    """A protocol's settings as a TOML file: the top-level keys, then a table for each dict.

    Examples
    --------
    >>> print(toml_text({"name": "x", "timing": {"blank_s": 1.0}}), end="")
    name = "x"
    [timing]
    blank_s = 1.0
    """
    lines = [f"{k} = {toml_value(v)}" for k, v in settings.items() if not isinstance(v, dict)]
    for table, values in settings.items():
        if isinstance(values, dict):
            lines += [f"[{table}]", *(f"{k} = {toml_value(v)}" for k, v in values.items())]
    return "\n".join(lines) + "\n"


def analysed_simulation(
    root: Path, *, participants: int, sketches: int, images: int, seed: int
) -> Path:
    """A simulated study's flat table (``root/ratings.csv``) and analyze's files for it
    (``root/analysis``, no figures, no resampling); returns ``root``."""
    from sbir_study.analysis import StudyDesign, analyze_ratings, load_ratings, simulate_study
    from sbir_study.analysis.options import AnalysisOptions

    design = StudyDesign(participants=participants, sketches=sketches, images_per_sketch=images)
    trials, _ = simulate_study(design, seed=seed)
    trials.to_csv(root / "ratings.csv", index=False, na_rep="n/a")
    analyze_ratings(
        load_ratings(root / "ratings.csv"),
        root / "analysis",
        AnalysisOptions(bootstrap=0, permutations=0),
        figures=False,
    )
    return root


#: The BIDS validators a dataset the toolkit writes must pass: the legacy one (npm
#: bids-validator 1.x, which make install puts in .node/) and the schema one (3.x, which
#: runs on Deno: PyPI's bids-validator-deno, in the [test] extra). They differ: the schema
#: validator checks the files against the specification's schema, the legacy one by its
#: own rules.
LEGACY_VALIDATOR = ROOT / ".node" / "node_modules" / ".bin" / "bids-validator"
SCHEMA_VALIDATOR = Path(sys.executable).parent / "bids-validator-deno"


def assert_valid_bids(root: Path) -> list[str]:
    """No errors from either BIDS validator on ``root``; the keys of their warnings (the
    legacy validator's ``key``, then the schema validator's ``code``)."""
    assert LEGACY_VALIDATOR.exists(), f"{LEGACY_VALIDATOR} is missing; make install installs it"
    assert SCHEMA_VALIDATOR.exists(), f"{SCHEMA_VALIDATOR} is missing; make install installs it"
    result = subprocess.run(
        [str(LEGACY_VALIDATOR), str(root), "--json"], capture_output=True, text=True
    )
    legacy = json.loads(result.stdout)
    errors = [
        (e["key"], e["reason"], [(f.get("file") or {}).get("relativePath") for f in e["files"]][:3])
        for e in legacy["issues"]["errors"]
    ]
    assert not errors, errors
    result = subprocess.run(
        [str(SCHEMA_VALIDATOR), str(root), "--json"], capture_output=True, text=True
    )
    schema = json.loads(result.stdout)["issues"]["issues"]
    errors = [
        (i["code"], i.get("location"), i.get("subCode")) for i in schema if i["severity"] == "error"
    ]
    assert not errors, errors
    return [w["key"] for w in legacy["issues"]["warnings"]] + [
        i["code"] for i in schema if i["severity"] == "warning"
    ]
