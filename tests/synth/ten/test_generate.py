"""TEN synthesis through ``topocoll.generate(..., "ten")`` and ``topocoll schedule -a ten``."""

import pytest

import topocoll as tc
from topocoll.collectives import COLLECTIVES
from topocoll.errors import UnsupportedError


@pytest.mark.parametrize("coll", sorted(COLLECTIVES))
def test_every_collective_through_generate_verifies(coll):
    s = tc.generate("torus:3x4", coll, "ten", root=5 if COLLECTIVES[coll].rooted else None,
                    chunks=2, seed=4)
    assert tc.verify(s).valid
    assert s.algorithm.startswith("ten")


def test_options_reach_the_synthesizer_and_unknown_ones_are_refused():
    a = tc.generate("ring:6", "allgather", "ten", seed=1, chunks=3)
    assert a.meta["chunks"] == 3 and a.meta["seed"] == 1
    with pytest.raises(UnsupportedError, match="no option shift"):
        tc.generate("ring:6", "allgather", "ten", shift=2)
