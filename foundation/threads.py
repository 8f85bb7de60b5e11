"""How many threads the crowd-size work may use: ``$SBIR_STUDY_THREADS``, else the cores.

At crowd size ``analyze`` computes its statistics on a pool of threads beside the
inter-user pairs, which run one sketch per thread, and the reader of a ratings study
hashes its files on a thread beside the parse; ``SBIR_STUDY_THREADS=1`` keeps everything
in the calling thread (a shared machine, or a check of one thread's results). Every
result is the same at any number.
"""

from __future__ import annotations

import os

__all__ = ["THREADS_VARIABLE", "threads"]

#: Sets the threads of the crowd-size statistics (whole number >= 1), where a machine is
#: shared or to check the results of one thread; unset, one per core.
THREADS_VARIABLE = "SBIR_STUDY_THREADS"


def threads() -> int:
    """The threads for the sketches: ``$SBIR_STUDY_THREADS`` if set, else the cores this
    process may run on (at most 8: each thread holds a sketch's pairs). The results are
    the same bits at any number: each sketch is computed whole on one thread.

    Examples
    --------
    >>> from sbir_study.foundation.environment import environment_variables
    >>> with environment_variables({THREADS_VARIABLE: " 3 "}):
    ...     threads()
    3
    """
    given = os.environ.get(THREADS_VARIABLE, "").strip()
    if given:
        if not (given.isascii() and given.isdigit()) or int(given) < 1:
            from sbir_study.foundation.checks import InputError

            raise InputError(
                f"${THREADS_VARIABLE}: {given!r}; expected a whole number >= 1 "
                "(the threads of the crowd-size statistics)"
            )
        return int(given)
    if hasattr(os, "sched_getaffinity"):
        return min(len(os.sched_getaffinity(0)), 8)
    return min(os.cpu_count() or 1, 8)
