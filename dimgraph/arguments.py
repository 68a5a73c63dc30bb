"""What every public `dg.*` function takes, checked at the door: a wrong argument is named before any work.

Each parameter of a public function has a kind (`KINDS`): by its name
(`BY_NAME`: `x` is an operand, `dtype` a dtype, `n_steps` a count, ...) unless
the function says otherwise (`BY_FUNCTION`). `guard(namespace)` wraps every
public function of the namespace (the package's `__init__`, and `dg.linalg`)
so that a call first checks its arguments and raises a `TypeError` naming the
function, the argument, what it must be and what came:

    dg.scan: n_steps must be None, an int or a 0-d integer variable; got '3'

The kinds check what an argument is (its type), not its range or whether it
fits the others (a negative count, a dim that the operand lacks, a shape that
does not match): the functions check that themselves, naming the argument
too. Classes (`dg.Dim`, `dg.FlatParams`, ...) check their arguments in their
constructors. A parameter whose name has no kind goes unchecked, and
`tests/test_public_arguments.py` lists it.
"""

from __future__ import annotations

import functools
import inspect
import numbers

import numpy as np

from dimgraph.core.graph import Variable
from dimgraph.labeled.dims import Dim


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _is_dataarray(x) -> bool:
    return type(x).__name__ == "DataArray" and type(x).__module__.startswith("xarray")


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, (bool, np.bool_))


def _operand(x) -> bool:
    """A value ops compute with: a graph variable, a DataArray, or numbers (bool, int, float, complex)."""
    if isinstance(x, Variable) or _is_dataarray(x):
        return True
    try:
        kind = np.asarray(x).dtype.kind
    except (TypeError, ValueError):
        return False
    return kind in "biufc"


def _data(x) -> bool:
    """What a constant holds: numbers, or labels (text, mixed objects) that `sel` reads; not arbitrary objects."""
    if _operand(x):
        return True
    try:
        arr = np.asarray(x)
    except (TypeError, ValueError):
        return False
    if arr.dtype.kind in "US":
        return True
    return arr.dtype.kind == "O" and all(isinstance(e, (str, bytes, numbers.Number)) or e is None for e in arr.flat)


def _sequence_of(check):
    def each(x):
        return isinstance(x, (list, tuple)) and all(check(e) for e in x)

    return each


def _dim(x) -> bool:
    return isinstance(x, (Dim, str)) or x is Ellipsis  # `...`: every dim, as in xarray


def _count(x) -> bool:
    if isinstance(x, Variable):
        return x.type.ndim == 0 and str(x.type.dtype).startswith(("int", "uint"))
    return _is_int(x)


def _dtype(x) -> bool:
    if isinstance(x, (str, type, np.dtype)):
        try:
            np.dtype(x)
        except TypeError:
            return False
        return True
    return False


def _graph(x) -> bool:
    """What printing and drawing take: a variable, a list of them, a compiled function or a FunctionGraph."""
    from dimgraph.compile.function import Function

    return (
        isinstance(x, (Variable, Function))
        or _sequence_of(lambda v: isinstance(v, Variable))(x)
        or hasattr(x, "toposort")
    )


def _one_or_many(check):
    return lambda x: check(x) or _sequence_of(check)(x)


def _optional(check):
    return lambda x: x is None or check(x)


def _variables(x) -> bool:
    return _one_or_many(lambda v: isinstance(v, Variable))(x)


def _shape(x) -> bool:
    return _sequence_of(lambda s: s is None or _is_int(s))(x)


def _replacements(x) -> bool:
    return isinstance(x, dict) and all(isinstance(k, Variable) and _operand(v) for k, v in x.items())


def _placeholders(x) -> bool:
    pairs = x.items() if isinstance(x, dict) else x
    return isinstance(x, (dict, list, tuple)) and all(
        isinstance(p, tuple) and len(p) == 2 and all(isinstance(v, Variable) for v in p) for p in pairs
    )


def _core_dims(x) -> bool:
    return _sequence_of(_one_or_many(_dim))(x)  # per argument: its core dims (a lone name is one dim)


def _rewrites(x) -> bool:
    return isinstance(x, (str, dict)) or type(x).__name__ == "RewriteSpec"


def _bool(x) -> bool:
    return isinstance(x, (bool, np.bool_)) or (_is_int(x) and x in (0, 1))


# kind: (check, what it must be)
KINDS = {
    "operand": (_operand, "a variable, a DataArray or numbers"),
    "data": (_data, "numbers or labels (an array, a DataArray or a variable)"),
    "operands": (_one_or_many(_operand), "a variable, a DataArray or numbers, or a list of them"),
    "optional operand": (_optional(_operand), "None, a variable, a DataArray or numbers"),
    "variable": (lambda x: isinstance(x, Variable), "a graph variable (labeled or positional)"),
    "variables": (_variables, "a graph variable or a list of them"),
    "optional variables": (_optional(_variables), "None, a graph variable or a list of them"),
    "graph": (_graph, "a variable, a list of variables, a compiled function or a FunctionGraph"),
    "replacements": (_replacements, "a dict {variable: variable, DataArray or numbers}"),
    "placeholders": (_placeholders, "a dict {placeholder: positional variable} or a list of such pairs"),
    "updates": (lambda x: x is None or isinstance(x, dict), "None or a dict {shared variable: new value}"),
    "callable": (callable, "a callable"),
    "optional callable": (_optional(callable), "None or a callable"),
    "name": (lambda x: x is None or isinstance(x, str), "None or a str"),
    "str": (lambda x: isinstance(x, str), "a str"),
    "optional str": (lambda x: x is None or isinstance(x, str), "None or a str"),
    "dtype": (_optional(_dtype), "None or a NumPy dtype (or its name)"),
    "dim": (_optional(_one_or_many(_dim)), "None, a Dim or dim name, or a list of them (... for all)"),
    "dims": (_optional(_one_or_many(_dim)), "None, a Dim or a sequence of Dims"),
    "core dims": (_core_dims, "a list with the core dims of each argument (Dims or dim names)"),
    "axis": (_optional(_one_or_many(_is_int)), "None, an int or a sequence of ints"),
    "shape": (_optional(_shape), "None or a sequence of ints (None for an unknown length)"),
    "int": (_is_int, "an int"),
    "optional int": (_optional(_is_int), "None or an int"),
    "bool": (_bool, "True or False (or 1 or 0)"),
    "count": (_count, "an int or a 0-d integer variable"),
    "optional count": (_optional(_count), "None, an int or a 0-d integer variable"),
    "file": (_optional(lambda f: callable(getattr(f, "write", None))), "None or a file-like object with write()"),
    "rewrites": (_rewrites, '"default", "none" or a dict with include/exclude'),
    "scalar": (lambda x: _operand(x) and np.ndim(x) == 0, "a number"),
    "dims to exclude": (
        lambda x: _sequence_of(_dim)(x) or isinstance(x, (set, frozenset)),
        "a sequence of Dims or dim names",
    ),
    "dim or number": (lambda x: isinstance(x, Dim) or _operand(x), "a Dim, or numbers as NumPy's arange takes"),
    "factor and lower": (
        lambda x: _operand(x) or (isinstance(x, tuple) and len(x) == 2 and _operand(x[0]) and _bool(x[1])),
        "scipy's pair (Cholesky factor, lower: bool), or the factor alone",
    ),
    "any": (lambda x: True, "anything"),
}

# The kind of a parameter by its name, in every public function that has it.
BY_NAME = {
    **dict.fromkeys(("x", "y", "a", "b", "p", "t", "then", "otherwise", "fill_value"), "operand"),
    "value": "data",
    **dict.fromkeys(("lower", "upper"), "optional operand"),
    **dict.fromkeys(("arrays", "objects", "xs"), "operand"),  # each of `*arrays`
    "cost": "variable",
    **dict.fromkeys(("wrt", "outputs", "inputs", "params"), "variables"),
    **dict.fromkeys(("step", "fn"), "callable"),
    "grad": "optional callable",
    "name": "name",
    "dtype": "dtype",
    "dim": "dim",
    "dims": "dims",
    "axis": "axis",
    "shape": "shape",
    "size": "optional int",
    "decimals": "int",
    "depth": "optional int",
    **dict.fromkeys(("width", "max_label"), "int"),
    **dict.fromkeys(
        ("keepdims", "trace", "inline", "return_numpy", "map_extra_dims", "trans", "unit_diagonal"), "bool"
    ),
    "b_ndim": "optional int",
    "n_steps": "optional count",
    "max_steps": "count",
    "seed": "any",  # `core.random.seed_sequence` checks it, naming it (a ValueError for a negative one)
    "file": "file",
    "obj": "graph",
    "replace": "replacements",
    "given": "placeholders",
    "updates": "updates",
    "rewrites": "rewrites",
    "backend": "optional str",
    **dict.fromkeys(("disconnected", "join"), "str"),
    **dict.fromkeys(("exclude", "aligned"), "dims to exclude"),  # names of dims (vectorize_graph: those aligned)
    **dict.fromkeys(("core_dims_in", "core_dims_out"), "core dims"),
    "sequences": "optional variables",
    "init": "operands",
    "cond": "operand",
    **dict.fromkeys(("args", "kwargs", "options"), "any"),  # passed on: the callee names them
}

# Where a function's parameter differs from its name's kind.
BY_FUNCTION = {
    "while_loop": {"cond": "callable"},
    "concat": {"xs": "operands"},
    "align": {"fill_value": "scalar"},
    "ifelse": {"then": "operands", "otherwise": "operands"},
    "op_from_graph": {"outputs": "variables"},
    "jacobian": {"y": "variable", "x": "variable"},
    "hessian": {"x": "variable"},
    "arange": {"dim": "dim or number", "args": "operand"},
    **{f"linalg.{fn}": {"lower": "bool"} for fn in ("cholesky", "eigh", "solve_triangular")},
    "linalg.cho_solve": {"c_and_lower": "factor and lower"},
}


def kind_of(function: str, parameter: str) -> str | None:
    """The kind of `parameter` of `dg.<function>` (None: no kind is known for it).

    >>> kind_of("scan", "n_steps"), kind_of("while_loop", "cond"), kind_of("where", "cond")
    ('optional count', 'callable', 'operand')
    """
    return BY_FUNCTION.get(function, {}).get(parameter, BY_NAME.get(parameter))


def guarded(public: str, fn):
    """`fn` checking its arguments' kinds first (`KINDS`), errors naming `dg.<public>` and the argument."""
    signature = inspect.signature(fn)
    checks = []
    for p in signature.parameters.values():
        kind = kind_of(public, p.name)
        if kind is not None and kind != "any":  # NOTE: one without a kind is listed by tests/test_public_arguments.py
            checks.append((p.name, p.kind == p.VAR_POSITIONAL, *KINDS[kind]))

    @functools.wraps(fn)
    def checked(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)  # a wrong count of arguments: Python's own TypeError
        for name, many, check, expected in checks:
            if name not in bound.arguments:
                continue
            given = bound.arguments[name]
            for k, value in enumerate(given) if many else [(None, given)]:
                if not check(value):
                    where = name if k is None else f"{name}[{k}]"
                    raise TypeError(f"dg.{public}: {where} must be {expected}; got {_short(value)}")
        return fn(*args, **kwargs)

    checked.__signature__ = signature
    return checked


def guard(namespace: dict, names=None, prefix: str = "") -> dict:
    """Every public function of `namespace` (or those in `names`; not classes, modules or private
    names) as `guarded`, named `dg.<prefix><name>` in errors."""
    for public in list(namespace if names is None else names):
        value = namespace[public]
        if public.startswith("_") or inspect.isclass(value) or inspect.ismodule(value) or not callable(value):
            continue
        namespace[public] = guarded(prefix + public, value)
    return namespace
