"""Tables of the 256-layer ziggurat for standard normals (Marsaglia and Tsang 2000), shared by numba and c.

Layer i covers x in [0, x_i] under exp(-x^2 / 2); a draw takes 8 bits for the
layer, 1 for the sign and 52 for the abscissa, and is accepted at once when
it falls inside the layer's rectangle (`KI`), which is 99% of draws. `WI`
scales the 52-bit integer to x; `FI` holds exp(-x_i^2 / 2) for the wedge test.
"""

from __future__ import annotations

import math

import numpy as np

R = 3.6541528853610088  # the start of the tail
AREA = 0.00492867323399  # the area of each layer
_M = 2.0**52
# Rectangle bounds a hair inside the exact ones: a draw near a bound goes to the exact wedge test.
_INSIDE = 1.0 - 1e-10


def normal_tables():
    """(KI uint64, WI float64, FI float64), 256 entries each."""
    ki, wi, fi = np.zeros(256, np.uint64), np.zeros(256), np.zeros(256)
    dn = tn = R
    q = AREA / math.exp(-0.5 * dn * dn)
    ki[0], ki[1] = int((dn / q) * _M * _INSIDE), 0
    wi[0], wi[255] = q / _M, dn / _M
    fi[0], fi[255] = 1.0, math.exp(-0.5 * dn * dn)
    for i in range(254, 0, -1):
        dn = math.sqrt(-2.0 * math.log(AREA / dn + math.exp(-0.5 * dn * dn)))
        ki[i + 1] = int((dn / tn) * _M * _INSIDE)
        tn = dn
        fi[i] = math.exp(-0.5 * dn * dn)
        wi[i] = dn / _M
    return ki, wi, fi


KI, WI, FI = normal_tables()
