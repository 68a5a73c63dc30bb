import math
import numpy as np
from dimgraph.labeled import linalg, math as lmath
from dimgraph.labeled.basic import constant
from dimgraph.labeled.dims import Dim
from dimgraph.labeled.transforms import CholeskyCov


class PositiveDefinite(CholeskyCov):
    """Symmetric positive definite matrices on dims (row, col) <-> R^(n(n+1)/2): X = L L^T with L from
    `CholeskyCov` (lower triangular, the diagonal on the log scale).

    X's lower triangle depends triangularly on L's, with log|det dX/dL| = n log 2 + sum_i (n - i) log L_ii
    (rows from 0), so with log L_ii = y_ii the log-Jacobian is n log 2 + sum_i (n - i + 1) y_ii.
    """

    name = "positive_definite"

    def __init__(self, dims):
        super().__init__(dims)
        rows, cols = np.tril_indices(self.n)
        self._diag_weight = constant(np.where(rows == cols, self.n - rows + 1.0, 0.0), dims=(self.free,))

    def backward(self, y):
        chol = super().backward(y)
        inner = Dim(f"_{self.row.name}_{self.col.name}_inner", size=self.n)
        left = chol.rename({self.col: inner})
        right = chol.rename({self.col: inner}).rename({self.row: self.col})
        out = (left * right).sum(inner)
        return out.transpose(*[d for d in out.dims if d not in (self.row, self.col)], self.row, self.col)

    def forward(self, x):
        return super().forward(linalg.cholesky(lmath.as_operand(x, "forward"), dims=(self.row, self.col)))

    def log_jac_det(self, y):
        y = lmath.as_operand(y, "log_jac_det")
        return (self._diag_weight * y).sum(self.free) + self.n * math.log(2.0)
