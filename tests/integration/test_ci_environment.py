"""On CI every real part must work: a missing install step fails here (and in every test that needs the
part) instead of skipping. The checks are the ones the tests themselves rely on (tests/_required.py)."""

from __future__ import annotations

import pytest

from _required import CHECKS, missing, on_ci

pytestmark = pytest.mark.skipif(not on_ci(), reason="checks the CI machine's install (CI=true)")


@pytest.mark.parametrize("part", sorted(CHECKS))
def test_every_required_part_works_on_ci(part: str) -> None:
    assert missing(part) is None, f"{part}: {missing(part)}"
