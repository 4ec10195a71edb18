"""How many candidates one verifier runs at once."""

import pytest

from services.verifier.service import WORKERS_ENV, workers


def test_env_overrides_and_bad_values_name_the_fix() -> None:
    assert workers({WORKERS_ENV: "3"}) == 3
    assert workers({}) in (1, 2)
    for bad in ("0", "x", "-2"):
        with pytest.raises(ValueError, match=WORKERS_ENV):
            workers({WORKERS_ENV: bad})
