"""The simulator's defaults reproduce the paper's published statistics (Sec. 3.3).

Reference values: Eitz et al. 2011, Sec. 3.3 (77.4% of anchoring correlations
significant, 86% of inter-user correlations, 99% of participant-vs-benchmark
correlations, W significant for all 31 sketches, bin-4 sd 1.4692 with the
smallest spreads at the ends of the scale). Tolerances are those the project
promises in docs/simulation.md; scripts/calibrate_simulator.py chose the defaults.
"""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "scripts"))
from calibrate_simulator import TARGETS, paper_statistics

from sbir_study.analysis import RaterModel

SEEDS = [101, 202, 303, 404, 505]


@pytest.fixture(scope="module")
def statistics():
    # Seeds other than those the calibration searched with (0, 1, 2).
    return {seed: paper_statistics(RaterModel(), seed) for seed in SEEDS}


@pytest.mark.parametrize("name", sorted(TARGETS))
def test_statistic_near_the_paper(statistics, name):
    # One simulated study varies from the next about as much as the tolerance
    # (sd over seeds: inter-user share 0.045, anchoring share 0.07; see
    # docs/simulation.md): the mean over five studies must be within the
    # tolerance, each single study within twice it.
    value, tolerance = TARGETS[name]
    values = np.array([statistics[seed][name] for seed in SEEDS])
    assert abs(values.mean() - value) <= tolerance, (name, values)
    assert np.all(np.abs(values - value) <= 2 * tolerance), (name, values)


@pytest.mark.parametrize("seed", SEEDS)
def test_w_significant_and_spread_smallest_at_the_ends(statistics, seed):
    assert statistics[seed]["w_significant"] == 31
    assert statistics[seed]["ends_smallest"]
