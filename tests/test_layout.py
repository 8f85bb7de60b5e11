"""The package's layout: one import name, layers that import only downwards, lean faces.

``pyproject.toml`` maps the folders ``foundation/``, ``analysis/``, ``stimuli/``,
``study/`` and ``cli/`` to the subpackages of ``sbir_study``. These tests read
the code's imports (with :mod:`ast`) and the installed modules; the wheel's contents are
checked with the install it makes (tests/test_install.py).
"""

from __future__ import annotations

import ast
import graphlib
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.helpers import DATA, ROOT, SBIR_STUDY, not_source

#: What each layer may import of the project (besides itself): the foundation nothing,
#: the command line everything.
ALLOWED = {
    "sbir_study.foundation": set(),
    "sbir_study.analysis": {"sbir_study.foundation"},
    "sbir_study.stimuli": {"sbir_study.foundation"},
    # The lab session's simulated participant is the rater model of analysis.simulate.
    "sbir_study.study": {"sbir_study.foundation", "sbir_study.stimuli", "sbir_study.analysis"},
    "sbir_study.cli": {
        "sbir_study.foundation",
        "sbir_study.analysis",
        "sbir_study.stimuli",
        "sbir_study.study",
    },
}
#: Generic names that must never be imported at the top level: a user's own analysis.py
#: or study/ would shadow them, or they would shadow the user's.
GENERIC = {"analysis", "study", "stimuli", "foundation", "cli"}


def _folders() -> dict[str, Path]:
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    folders = settings["tool"]["setuptools"]["package-dir"]
    return {package: ROOT / folder for package, folder in folders.items()}


def _modules() -> dict[str, Path]:
    """Every module of sbir_study, by its installed name, and its file."""
    modules = {}
    for package, folder in _folders().items():
        for path in folder.rglob("*.py"):
            relative = path.relative_to(folder)
            if "migrations" in relative.parts or "node_modules" in relative.parts:
                continue
            if package == "sbir_study" and len(relative.parts) > 1:
                continue  # the top folder holds only the face
            parts = relative.with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join((package, *parts))] = path
    return modules


def _imports(name: str, path: Path) -> set[str]:
    """The project modules (or packages) ``name`` imports, anywhere in its code."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("sbir_study"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module.startswith("sbir_study"):
                found.add(module)
                found.update(f"{module}.{a.name}" for a in node.names)
    return found


def _layer(module: str) -> str:
    """The subpackage of ``module``; the top (the face and ``python -m sbir_study``) is
    ``sbir_study``."""
    layer = ".".join(module.split(".")[:2])
    return "sbir_study" if layer == "sbir_study.__main__" else layer


MODULES = _modules()


def test_every_source_file_is_a_module_of_sbir_study():
    assert len(MODULES) > 60
    assert {_layer(m) for m in MODULES} == {"sbir_study", *ALLOWED}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_a_module_imports_only_its_own_layer_and_those_below(name):
    layer = _layer(name)
    if layer == "sbir_study":  # the face loads nothing; __main__ runs the command line
        return
    wrong = sorted(
        target
        for target in _imports(name, MODULES[name])
        if _layer(target) != layer and _layer(target) not in ALLOWED[layer]
    )
    assert not wrong, f"{name} imports {wrong}, above or beside its layer"


def test_no_import_circle():
    graph = {}
    for name, path in MODULES.items():
        # A package's submodules are imported through it, so the edge to a package face
        # counts only where the face itself imports (lazy faces import nothing).
        graph[name] = {t for t in _imports(name, path) if t in MODULES and t != name}
    try:
        list(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        pytest.fail(f"import circle: {' -> '.join(error.args[1])}")


def _repository_python_files() -> list[Path]:
    files = []
    for base, folders, names in os.walk(ROOT):
        folders[:] = [f for f in folders if not not_source(f)]  # not walked at all
        files += [Path(base) / n for n in names if n.endswith(".py")]
    return files


def test_nothing_in_the_repository_imports_a_generic_top_level_name():
    offenders = []
    files = _repository_python_files()
    # The walk reaches every part of the code (the tests and benchmarks beside the package).
    assert {
        ROOT / "tests" / "test_layout.py",
        ROOT / "benchmarks" / "bench_crowd.py",
        ROOT / "analysis" / "retrieval" / "runs.py",
    } <= set(files)
    for path in files:
        relative = path.relative_to(ROOT)
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [
                f"{relative}:{node.lineno}: {n}" for n in names if n.split(".")[0] in GENERIC
            ]
    assert not offenders


def _run_python(code: str, cwd: Path, **env) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        check=False,
    )


@pytest.fixture
def shadowing_folder(tmp_path):
    """A research folder with its own analysis.py, study.py and stimuli.py (and cli/,
    foundation/), each of which fails if anything imports it."""
    for name in ("analysis", "study", "stimuli"):
        (tmp_path / f"{name}.py").write_text(f"raise ImportError('the user\\'s own {name}.py')\n")
    for name in ("cli", "foundation"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("raise ImportError('the user\\'s own')\n")
    return tmp_path


def test_the_package_works_beside_a_users_own_analysis_study_and_stimuli(shadowing_folder):
    # python -c puts the working folder first on the import path, where the user's files are.
    result = _run_python(
        "import sbir_study.analysis, sbir_study.study.recorder, sbir_study.stimuli,"
        " sbir_study.cli; from sbir_study.analysis import load_ratings;"
        " from sbir_study.stimuli import load_set; print('ok')",
        shadowing_folder,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    result = subprocess.run(
        [
            *SBIR_STUDY,
            "analyze",
            str(DATA / "ratings_small.csv"),
            "--out",
            "results",
            "--no-figures",
        ],
        cwd=shadowing_folder,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (shadowing_folder / "results" / "ground_truth.csv").is_file()


def _loaded_after(statement: str) -> list[str]:
    result = _run_python(
        f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))", ROOT
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize(
    "statement",
    [
        "import sbir_study.study.recorder",
        "from sbir_study.foundation import bids",
        "from sbir_study.foundation.bids import write_participants",
        "import sbir_study.study.trials, sbir_study.study.responses",
        "import sbir_study.stimuli.validate",
    ],
)
def test_the_recorder_and_the_bids_files_load_no_statistics_figures_or_retrieval(statement):
    loaded = _loaded_after(statement)
    assert not [m for m in loaded if m.startswith("sbir_study.analysis")]
    assert not [m for m in loaded if m.split(".")[0] in ("matplotlib", "scipy", "statsmodels")]
    assert not [m for m in loaded if m.split(".")[0] in ("psychopy", "fastapi", "sqlalchemy")]


def test_importing_the_package_or_a_face_loads_nothing_else():
    loaded = _loaded_after("import sbir_study, sbir_study.analysis, sbir_study.stimuli")
    ours = {m for m in loaded if m.startswith("sbir_study")}
    assert ours == {"sbir_study", "sbir_study.analysis", "sbir_study.stimuli"}


FACES = sorted(name for name, path in MODULES.items() if path.name == "__init__.py")


@pytest.mark.parametrize("face", FACES)
def test_a_face_lists_only_its_own_packages_names_and_each_resolves(face):
    import importlib

    package = importlib.import_module(face)
    for name in package.__all__:
        value = getattr(package, name)
        home = (
            getattr(value, "__name__", "")
            if isinstance(value, type(sys))
            else getattr(value, "__module__", None)
        )
        if home is None:  # a constant: it must come from one of the face's own modules
            home = next(
                m
                for m in sys.modules
                if (m == face or m.startswith(face + "."))
                and getattr(sys.modules[m], name, None) is value
            )
        assert home == face or home.startswith(face + "."), f"{face}.{name} comes from {home}"


def test_the_online_session_imports_nothing_of_the_lab_session():
    lab = ("sbir_study.study.session", "sbir_study.study.display")

    def is_lab(module: str) -> bool:
        return any(module == m or module.startswith(m + ".") for m in lab)

    for name, path in MODULES.items():
        if name.startswith("sbir_study.study.online"):
            assert not [m for m in _imports(name, path) if is_lab(m)], name
    loaded = _loaded_after(
        "import sbir_study.study.online.server, sbir_study.study.online.service,"
        " sbir_study.study.online.export"
    )
    assert not [m for m in loaded if m.split(".")[0] == "psychopy" or is_lab(m)]


@pytest.mark.parametrize("arguments", [["--version"], ["--help"], ["analyze", "--help"]])
def test_the_command_lines_version_and_help_load_no_numerical_library(arguments):
    # What keeps `sbir-study --version` and `analyze --help` quick (benchmarks/bench_imports.py
    # times them): only the family of the named subcommand is built, from light modules.
    loaded = _loaded_after(
        "import contextlib, io; from sbir_study.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    try: main({arguments!r})\n"
        "    except SystemExit: pass"
    )
    heavy = [m for m in loaded if m.split(".")[0] in ("numpy", "pandas", "scipy", "pyarrow")]
    assert not heavy
    assert not [
        m
        for m in loaded
        if m.startswith("sbir_study.analysis.") and m != "sbir_study.analysis.limits"
    ]


def test_a_named_subcommand_is_built_whole_and_the_others_listed():
    from sbir_study.cli import build_parser

    whole = build_parser()
    only = build_parser("baseline")
    choices = whole._subparsers._group_actions[0].choices
    listed = only._subparsers._group_actions[0].choices
    assert list(listed) == list(choices)  # every subcommand is listed, in the same order
    for name in ("evaluate", "evaluate-hpatches", "baseline"):  # one family, built whole
        assert listed[name].format_help() == choices[name].format_help()
    assert listed["analyze"].format_help() != choices["analyze"].format_help()


#: The most lines a module of the package may have, and the most lines of code (not blank,
#: not a comment, the docstring aside) a function may have without a reason beside it: a
#: comment line directly above its ``def`` (or its decorators) that starts with this.
MODULE_LINES = 700
FUNCTION_LINES = 80
KEPT_WHOLE = "# Kept whole:"


def _functions(path: Path):
    """Each function of ``path``: its node and its lines of code."""
    lines = path.read_text(encoding="utf-8").splitlines()
    for node in ast.walk(ast.parse("\n".join(lines))):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        docstring = ast.get_docstring(node, clean=False) is not None
        skipped = (
            set(range(node.body[0].lineno, node.body[0].end_lineno + 1)) if docstring else set()
        )
        code = [
            number
            for number in range(node.lineno, node.end_lineno + 1)
            if number not in skipped
            and lines[number - 1].strip()
            and not lines[number - 1].strip().startswith("#")
        ]
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        yield node, len(code), lines[first - 2].strip() if first > 1 else ""


def test_modules_and_functions_are_of_a_size_a_reader_can_hold():
    too_long = []
    for name, path in sorted(MODULES.items()):
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MODULE_LINES:
            too_long.append(f"{name}: {count} lines (at most {MODULE_LINES})")
        for node, code, above in _functions(path):
            if code > FUNCTION_LINES and not above.startswith(KEPT_WHOLE):
                too_long.append(
                    f"{name}.{node.name} (line {node.lineno}): {code} lines of code, "
                    f"without a {KEPT_WHOLE!r} comment above it"
                )
    assert not too_long, "\n".join(too_long)


def _public_functions(body: list[ast.stmt]):
    """The public functions of a module or class body: those of the module and of its
    public classes (nested ones included) whose name has no leading underscore, and the
    constructors of those classes; not functions nested in functions."""
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_") or node.name == "__init__":
                yield node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            yield from _public_functions(node.body)


def test_every_public_function_is_annotated():
    """Parameters and return of every public function (``self``, ``cls`` and a
    constructor's return aside), so that the type checker reads its body (``make lint``)."""
    missing = []
    for name, path in sorted(MODULES.items()):
        module = ast.parse(path.read_text(encoding="utf-8"))
        for node in _public_functions(module.body):
            arguments = node.args
            every = [
                *arguments.posonlyargs,
                *arguments.args,
                *arguments.kwonlyargs,
                *(a for a in (arguments.vararg, arguments.kwarg) if a is not None),
            ]
            bare = [a.arg for a in every if a.annotation is None and a.arg not in ("self", "cls")]
            if node.returns is None and node.name != "__init__":
                bare.append("return")
            if bare:
                missing.append(f"{name}.{node.name} (line {node.lineno}): {', '.join(bare)}")
    assert not missing, "\n".join(missing)


def _stub_names(stub: Path) -> dict[str, list[str]]:
    """The stub's imports as lazy_loader reads them: each module's names ('' for submodules)."""
    names: dict[str, list[str]] = {}
    for node in ast.parse(stub.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom):
            names.setdefault(node.module or "", []).extend(a.name for a in node.names)
    return names


@pytest.mark.parametrize("face", [f for f in FACES if MODULES[f].with_suffix(".pyi").exists()])
def test_a_faces_stub_names_what_its_modules_export_and_is_what_it_offers(face):
    import importlib

    stub = _stub_names(MODULES[face].with_suffix(".pyi"))
    offered: set[str] = set(stub.pop("", []))
    for module, names in stub.items():
        exported = set(importlib.import_module(f"{face}.{module}").__all__)
        assert set(names) <= exported, f"{face}.{module} does not export {set(names) - exported}"
        offered |= set(names)
    assert set(importlib.import_module(face).__all__) == offered


def test_every_lazy_face_reads_its_names_from_its_stub():
    for face in FACES:
        text = MODULES[face].read_text(encoding="utf-8")
        if "lazy_loader" in text:
            assert "lazy_loader.attach_stub(__name__, __file__)" in text, face
            assert MODULES[face].with_suffix(".pyi").exists(), face
