"""Error classes users catch: every message names the variable, the expectation and what came."""


class DimError(ValueError):
    """Dims that clash in one expression (names, sizes or coords)."""


class InputError(ValueError):
    """Data given to a compiled function that does not fit its declared input."""


class UnlistedInput(InputError):
    """A graph that reads an input its compiled function does not list: `UnlistedInput(shown, inputs)`,
    `shown` the input as the message shows it (its name's repr), `inputs` the names of those listed.

    The message is made from the fields (as `IndexOutOfBounds`'s), so a caller that lists
    its inputs under other names (`flat_value_and_grad`: the parameters, not the vector
    holding them) raises it with those.
    """

    def __str__(self):
        if len(self.args) != 2:
            return super().__str__()
        shown, inputs = self.args
        return f"the outputs depend on input {shown}, which is not among the function inputs {list(inputs)}"


class NoMatchingEntry(TypeError):
    """Arguments of types a compiled entry was not compiled for (numba's jitted graph and flat entry, which
    compile no more once ready): the caller takes its general path, which converts them or names what is wrong."""


class BackendUnavailable(RuntimeError):
    """A backend that cannot run on this machine (missing package, missing compiler)."""


class ShapeError(ValueError):
    """Run-time sizes that contradict the graph (e.g. an axis of unknown size that is 1 against a longer one)."""


class NoDrawsError(TypeError):
    """A draw was asked of a distribution without one (an improper prior, a custom density given no `draw`)."""


class NonDifferentiable(TypeError):
    """A gradient asked for through an op (or an op's input) that has none; the message names both."""


class IndexOutOfBounds(IndexError):
    """A position outside an axis, raised by compiled kernels with NumPy's message.

    Kernels raise it with the numbers only (`IndexOutOfBounds(index, size, axis)`):
    Numba compiles that cheaply, where formatting the text in the kernel would not.
    """

    def __str__(self):
        if len(self.args) != 3:
            return super().__str__()
        index, size, axis = self.args
        return f"index {index} is out of bounds for axis {axis} with size {size}"


class PerformanceWarning(RuntimeWarning):
    """A compiled graph runs a node by its op's Python `perform` (no compiled form): microseconds to
    milliseconds per call on a hot path; `f.summary()` names the nodes."""


class CacheWarning(RuntimeWarning):
    """A cache directory or file that dimgraph refused or discarded (it recompiles instead)."""
