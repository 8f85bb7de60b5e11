"""``sbir-study import``: ratings collected with other tools, as the BIDS dataset ``run`` records.

The reading is :mod:`sbir_study.analysis.importers`'; this module declares the options
(their values parsed by :mod:`.import_options`), calls the readers and reports.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .common import InputError, Subcommands, add_overwrite, add_scale

if TYPE_CHECKING:
    from sbir_study.analysis.importers import ImportedRatings
    from sbir_study.foundation.scale import Scale

__all__ = ["COMMANDS", "register"]

#: This family's subcommands and their one-line help (what ``sbir-study --help`` lists).
COMMANDS = {
    "import": "turn ratings collected with other tools into a BIDS dataset",
}


def register(commands: Subcommands) -> None:
    """Add ``import`` and its formats to the subcommands."""
    parser = commands.add_parser(
        "import",
        help=COMMANDS["import"],
        description="Read ratings collected with another tool and write the BIDS dataset that "
        "sbir-study run records (one sub-<label>/beh/..._beh.tsv and sidecar per participant, "
        "participants.tsv with each id as the source gave it), which sbir-study analyze reads. "
        "Every sidecar records the source files' SHA-256 and how they were read. See the "
        "README, 'Analysing your own ratings', and docs/formats.md.",
    )
    formats = parser.add_subcommands(dest="format", required=True, metavar="FORMAT")
    _register_table(formats)
    _register_psychopy(formats)
    _register_jspsych(formats)
    _register_wide(formats)


def _register_table(formats: Subcommands) -> None:
    table = formats.add_parser(
        "table",
        help="long tables: one row per rated pair (CSV, TSV, semicolons, R's write.csv)",
        description="Long tables, one row per rated pair, from any tool (a spreadsheet, R, "
        "SPSS, a survey's long export). Columns named participant, sketch_id, image_id, rating "
        "(and optionally rt, phase, trial, anchor_rating), in any case, are found by "
        "themselves; --columns names the others. The separator is sniffed and a decimal comma "
        "recognised unless given.",
    )
    _common(table)
    table.add_argument(
        "--sep",
        default=None,
        help="field separator: comma, semicolon, tab or bar (default: sniffed from the header "
        "and the first lines; an ambiguous table is refused)",
    )
    table.add_argument(
        "--decimal",
        choices=(".", ","),
        default=None,
        help="decimal mark of the numbers (default: a comma when the table is not "
        "comma-separated and a number has one, else a point)",
    )
    table.add_argument(
        "--rt-unit",
        choices=("s", "ms"),
        default="s",
        help="unit of the response times (default: s; written in seconds)",
    )
    table.set_defaults(handler=import_table)


def _register_psychopy(formats: Subcommands) -> None:
    psychopy = formats.add_parser(
        "psychopy",
        help="PsychoPy Builder's per-participant CSV data files",
        description="PsychoPy Builder's CSV data files (one per participant and session): the "
        "rows of the trials loop, whose condition columns name the sketch and the image "
        "(default sketch_id and image_id; --columns sketch_id=sketch,image_id=image), and the "
        "keyboard component's .keys and .rt. The last key pressed is the rating (every press is "
        "kept in the presses column when Builder stored all keys); the participant is Builder's "
        "expInfo field participant. A row belongs to the innermost loop it names (Builder's "
        "LOOP.thisN); the rows of one loop are read, --loop names it where several loops name "
        "pairs, --practice-loop a practice loop's.",
    )
    _common(psychopy)
    _keys_options(psychopy, "Builder records them (a, s, num_1")
    psychopy.add_argument(
        "--keyboard",
        default=None,
        help="the keyboard component holding the ratings (default: the one component with a "
        ".keys column)",
    )
    psychopy.add_argument(
        "--loop",
        default=None,
        help="the loop whose rows are the trials, as Builder names it (trials; default: the "
        "one loop whose rows name pairs; with several, the import stops and names them)",
    )
    psychopy.add_argument(
        "--practice-loop",
        default=None,
        help="a loop whose rows are practice (phase practice: kept in the dataset, left out of "
        "every statistic; default: none, the rows of loops not named are not read)",
    )
    psychopy.add_argument(
        "--repeats",
        choices=("keep-last", "keep-first"),
        default=None,
        help="which rating of a pair to keep when the trials loop showed it more than once "
        "(nReps above 1, thisRepN above 0): the last showing's or the first's (default: such "
        "a loop is refused)",
    )
    psychopy.set_defaults(handler=import_psychopy)


def _register_jspsych(formats: Subcommands) -> None:
    jspsych = formats.add_parser(
        "jspsych",
        help="jsPsych data (.json or .csv as jsPsych.data.get() writes them)",
        description="jsPsych data files (.json or .csv as jsPsych.data.get() writes them) of "
        "html-keyboard-response and image-keyboard-response trials: the key (response) mapped "
        "to the scale, rt in milliseconds (written in seconds). Each trial's pair is found "
        "through a stimulus set (--stimuli: the stimulus path, or the src of every image of "
        "its HTML, matched to the set's files) or in fields of the trial's data (--columns "
        "sketch_id=sketch,image_id=image). The participant is a field (--columns "
        "participant=subject_id; by itself one named participant, participant_id, subject or "
        "subject_id) or else the file's name. Text screens are no rating trials; --select "
        "names the rating trials by a field where others show images too.",
    )
    _common(jspsych)
    jspsych.add_argument(
        "--stimuli",
        type=Path,
        default=None,
        metavar="SET",
        help="the stimulus set the trials showed: each stimulus is matched to its manifest's "
        "files (default: none; then --columns names the fields of the sketch and the image)",
    )
    _keys_options(jspsych, "jsPsych records them (1, a, arrowleft")
    jspsych.add_argument(
        "--select",
        default=None,
        help="the rating trials' field values, as task=rating (default: every keyboard-response "
        "trial whose stimulus names a file of the set, or whose fields name a pair)",
    )
    jspsych.set_defaults(handler=import_jspsych)


def _register_wide(formats: Subcommands) -> None:
    wide = formats.add_parser(
        "wide",
        help="wide survey exports: one row per participant, one column per pair (Qualtrics, "
        "Google Forms, LimeSurvey)",
        description="Wide exports of survey tools (Qualtrics, Google Forms, LimeSurvey): one row "
        "per participant, one column per rated pair. --mapping names the column of each pair; "
        "other columns are not read. A Qualtrics export's two more header rows (question texts "
        "and ImportId) are found and left out. An answer gives the rating by its leading number "
        "(1 - best match, 7) or by --answers; an empty answer is a missing rating. A wide "
        "export records neither the order of presentation nor response times.",
    )
    wide.add_argument("files", type=Path, nargs="+", metavar="FILE", help="exports to import")
    wide.add_argument("--out", type=Path, required=True, help="the dataset folder to write")
    wide.add_argument(
        "--mapping",
        type=Path,
        required=True,
        help="a CSV file with the columns column,sketch_id,image_id: the export's column of "
        "each pair",
    )
    wide.add_argument(
        "--participant-column",
        default=None,
        help="the export's column of the participants' ids: ResponseId, PROLIFIC_PID, ... "
        "(default: one named participant, participant_id, subject or subject_id)",
    )
    wide.add_argument(
        "--answers",
        default=None,
        help="the rating of each answer label, as 'Best match=1,Good match=2,...' (default: an "
        "answer's leading whole number, as in '1 - best match')",
    )
    wide.add_argument(
        "--sep",
        default=None,
        help="field separator: comma, semicolon, tab or bar (default: sniffed)",
    )
    wide.add_argument(
        "--scale",
        default=None,
        help="the rating scale, as on import table (default: 1-7, 1 the best match, the paper's)",
    )
    wide.add_argument(
        "--encoding",
        default=None,
        help="text encoding of files without a byte-order mark: cp1252, latin-1, ... (default: "
        "UTF-8)",
    )
    add_overwrite(wide, "dataset")
    wide.set_defaults(handler=import_wide)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="files to import")
    parser.add_argument("--out", type=Path, required=True, help="the dataset folder to write")
    parser.add_argument(
        "--columns",
        default=None,
        help="which source column holds each column of the ratings table, as "
        "participant=Subject,rating=Response (default: the "
        "columns named as the ratings table names them, in any case)",
    )
    add_scale(
        parser,
        "the rating scale",
        "; recorded in every sidecar (default: 1-7, 1 the best match, the paper's)",
    )
    parser.add_argument(
        "--encoding",
        default=None,
        help="text encoding of files without a byte-order mark: cp1252, latin-1, ... (default: "
        "UTF-8; a byte-order mark says UTF-8, UTF-16 or UTF-32 by itself)",
    )
    add_overwrite(parser, "dataset")


def _keys_options(parser: argparse.ArgumentParser, recorded: str) -> None:
    parser.add_argument(
        "--keys",
        default=None,
        help=f"the rating keys as {recorded}, ...), one per scale point, the scale's low end "
        "first (a,s,d,f,g; default: the scale's points as digits, 1,2,...)",
    )
    parser.add_argument(
        "--protocol",
        type=Path,
        default=None,
        help="a protocol file whose keys and scale the study used, instead of --keys and "
        "--scale (default: none)",
    )


def _keys_and_scale(args: argparse.Namespace) -> tuple[dict[str, int], Scale]:
    """The rating of each key and the scale, from --protocol or from --keys and --scale."""
    from .import_options import parse_keys

    if args.protocol is None:
        scale = _scale(args.scale)
        return parse_keys(args.keys or ",".join(map(str, scale.points)), scale), scale
    if args.keys is not None or args.scale is not None:
        raise InputError(
            "--protocol: the protocol gives the keys and the scale; drop --keys and --scale"
        )
    from sbir_study.study.protocol import load_protocol

    protocol = load_protocol(args.protocol)
    scale = protocol.scale
    return dict(zip(protocol.response.keys, scale.points, strict=True)), scale


def _scale(text: str | None) -> Scale:
    from sbir_study.foundation.scale import PAPER_SCALE, Scale

    return PAPER_SCALE if text is None else Scale.parse(text)


def _check_files(args: argparse.Namespace, also_read: Sequence[Path] = ()) -> list[Path]:
    from sbir_study.foundation.checks import check_input_file
    from sbir_study.foundation.outputs import check_target

    files = [check_input_file(path, "a file to import") for path in args.files]
    check_target(args.out, "import", overwrite=args.overwrite, inputs=[*files, *also_read])
    return files


def import_table(args: argparse.Namespace) -> int:
    from sbir_study.analysis.importers import read_long_table

    from .import_options import parse_columns, parse_separator

    sep = parse_separator(args.sep)
    scale = _scale(args.scale)
    columns = parse_columns(args.columns)
    files = _check_files(args)
    imported = read_long_table(
        files,
        columns=columns,
        sep=sep,
        encoding=args.encoding,
        decimal=args.decimal,
        rt_unit=args.rt_unit,
        scale=scale,
    )
    return _write(args, imported, scale, files)


def import_psychopy(args: argparse.Namespace) -> int:
    from sbir_study.analysis.importers import read_psychopy

    from .import_options import parse_columns

    keys, scale = _keys_and_scale(args)
    columns = parse_columns(args.columns)
    files = _check_files(args)
    imported = read_psychopy(
        files,
        keys=keys,
        columns=columns,
        keyboard=args.keyboard,
        encoding=args.encoding,
        scale=scale,
        loop=args.loop,
        practice_loop=args.practice_loop,
        repeats=args.repeats,
    )
    return _write(args, imported, scale, files)


def import_jspsych(args: argparse.Namespace) -> int:
    from sbir_study.analysis.importers import read_jspsych

    from .import_options import parse_columns, parse_select

    keys, scale = _keys_and_scale(args)
    columns = parse_columns(args.columns)
    select = parse_select(args.select)
    named = "sketch_id" in columns or "image_id" in columns
    if args.stimuli is not None and named:
        raise InputError(
            "--stimuli: the set and --columns sketch_id/image_id both say where the pair is; "
            "give one"
        )
    if args.stimuli is None and not named:
        raise InputError(
            "--stimuli: expected the stimulus set the trials showed, or --columns "
            "sketch_id=FIELD,image_id=FIELD naming the fields of the pair"
        )
    files = _check_files(args)
    manifest = stimulus_set = None
    if args.stimuli is not None:
        from sbir_study.stimuli import load_set

        loaded = load_set(args.stimuli)
        manifest = loaded.manifest
        stimulus_set = {"Folder": str(args.stimuli), "Digest": loaded.digest}
    imported = read_jspsych(
        files,
        keys=keys,
        manifest=manifest,
        columns=columns,
        select=select,
        encoding=args.encoding,
        stimulus_set=stimulus_set,
    )
    return _write(args, imported, scale, files)


def import_wide(args: argparse.Namespace) -> int:
    from sbir_study.analysis.importers import read_wide, read_wide_mapping
    from sbir_study.foundation.checks import check_input_file

    from .import_options import parse_answers, parse_separator

    sep = parse_separator(args.sep)
    scale = _scale(args.scale)
    answers = None if args.answers is None else parse_answers(args.answers, scale)
    mapping_file = check_input_file(args.mapping, "a mapping file (column,sketch_id,image_id)")
    files = _check_files(args, also_read=[mapping_file])
    mapping, sha256 = read_wide_mapping(mapping_file, encoding=args.encoding)
    imported = read_wide(
        files,
        mapping=mapping,
        participant_column=args.participant_column,
        answers=answers,
        sep=sep,
        encoding=args.encoding,
        scale=scale,
        mapping_source={"File": str(args.mapping), "SHA256": sha256},
    )
    return _write(args, imported, scale, files, also_read=[mapping_file])


def _count(number: int, word: str) -> str:
    return f"{number} {word}{'' if number == 1 else 's'}"


def _write(
    args: argparse.Namespace,
    imported: ImportedRatings,
    scale: Scale,
    files: list[Path],
    also_read: Sequence[Path] = (),
) -> int:
    from sbir_study.analysis.importers import write_imported_dataset
    from sbir_study.foundation.provenance import toolkit_version

    checked = write_imported_dataset(
        imported,
        args.out,
        scale=scale,
        overwrite=args.overwrite,
        version=toolkit_version(),
        inputs=[*files, *also_read],
    )
    rated = int(checked["rating"].notna().sum())
    print(
        f"Imported {len(checked)} rows ({rated} ratings) of "
        f"{_count(checked['participant'].nunique(), 'participant')} from {len(files)} "
        f"{imported.settings['Format']} file{'s' if len(files) > 1 else ''} (scale {scale}); "
        f"BIDS dataset written to {args.out}"
    )
    return 0
