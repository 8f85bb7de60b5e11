"""Environment variables set for a block: seen inside, each put back as it was after it."""

import os

from hypothesis import given, settings
from hypothesis import strategies as st

from sbir_study.foundation.environment import environment_variables

#: Names that no other code of the test process reads, so that setting them cannot disturb it.
NAMES = [f"SBIR_STUDY_TEST_ENVIRONMENT_{k}" for k in range(4)]
# Values os.environ can hold on every platform: no NUL, no surrogates.
VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"))


@settings(max_examples=200, deadline=None)
@given(
    before=st.dictionaries(st.sampled_from(NAMES), VALUES),
    values=st.dictionaries(st.sampled_from(NAMES), VALUES),
    fails=st.booleans(),
)
def test_the_block_sees_the_values_and_the_environment_is_put_back(before, values, fails):
    # Reference: a copy of os.environ taken before the block; after it (also when the block
    # raises), every variable is as in the copy, one that was unset unset again.
    for name in NAMES:
        os.environ.pop(name, None)
    os.environ.update(before)
    expected = dict(os.environ)
    try:
        with environment_variables(values):
            for name in NAMES:
                assert os.environ.get(name) == values.get(name, before.get(name))
            if fails:
                raise KeyError("the block failed")
    except KeyError:
        assert fails
    finally:
        after = dict(os.environ)
        for name in NAMES:
            os.environ.pop(name, None)
    assert after == expected
