"""Ratings collected with other tools, turned into the BIDS dataset a session records.

``sbir-study import`` reads ratings that a lab collected elsewhere and writes the
same dataset ``sbir-study run`` records (``docs/formats.md``, "Ratings collected
elsewhere"): one ``sub-<label>/beh/sub-<label>_task-sbirrating_beh.tsv`` and its
sidecar per participant, ``participants.tsv`` with each participant's id as the
source gave it (``source_id``), and ``dataset_description.json``; ``sbir-study
analyze`` reads it as it reads a recorded one. Each sidecar records the rating
scale, and under ``Imported`` the format, the source files with their SHA-256, and
every decision taken in reading them (the column mapping, the separator, the text
encoding, the decimal mark, the unit of the response times, the keys).

One module per format, each reading files into :class:`ImportedRatings`:

* :mod:`.long_table`, long tables (:func:`read_long_table`): one row per rated pair,
  from a spreadsheet, R, SPSS or a survey's long export;
* :mod:`.builder`, PsychoPy Builder's per-participant CSV files (:func:`read_psychopy`);
* :mod:`.jspsych`, jsPsych data, ``.json`` or ``.csv`` (:func:`read_jspsych`), each
  stimulus matched to a pair of a stimulus set or named by fields of the trial;
* :mod:`.wide`, survey tools' wide exports (:func:`read_wide`; Qualtrics, Google
  Forms, LimeSurvey), with the mapping from column to pair (:func:`read_wide_mapping`).

What they share: :mod:`.delimited` reads a source's text (its encoding, its
separator) into cells, :mod:`.cells` finds the columns and checks ids and numbers,
and :mod:`.dataset` checks the ratings read, warns of ids that look like typos
(:class:`ImportedRatingsWarning`) and writes the dataset
(:func:`write_imported_dataset`). Every problem with a source is an
:class:`~sbir_study.foundation.checks.InputError` of one line naming the file, the
line (the header is line 1) and the column.
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
