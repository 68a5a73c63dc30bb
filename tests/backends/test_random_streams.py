"""The counter-based generator of the numba and c backends: Philox4x32-10 known answers, one stream on both."""

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends.numba.random import philox

# Random123's known-answer vectors for Philox4x32-10: (counter, key) -> output
KNOWN = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    (
        (0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344),
        (0xA4093822, 0x299F31D0),
        (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1),
    ),
]


@pytest.mark.parametrize("counter, key, expected", KNOWN)
def test_philox_known_answers(counter, key, expected):
    words = philox(*(np.uint64(c) for c in counter), *(np.uint64(k) for k in key))
    assert tuple(int(w) for w in words) == expected


def test_numba_and_c_draw_one_stream():
    obs = dg.Dim("obs", size=257)
    s = dg.rng_state("s")
    s1, u = dg.dist.uniform().draw(s, extra_dims=(obs,))
    s2, k = dg.dist.poisson(3.0).draw(s1, extra_dims=(obs,))
    _, z = dg.dist.normal().draw(s2, extra_dims=(dg.Dim("big", size=20001),))  # some draws need the slow path
    start = dg.seed_state(5)
    numba_values = dg.function([s], [u, k, z], backend="numba")(start)
    c_values = dg.function([s], [u, k, z], backend="c")(start)
    for a, b in zip(numba_values, c_values):
        np.testing.assert_allclose(a, b, rtol=1e-15, atol=0)
