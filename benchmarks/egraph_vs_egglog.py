"""Micro-benchmark behind docs/egraph.md's choice of e-graph: dimgraph's own (pure Python) against egglog.

    .venv/bin/python benchmarks/egraph_vs_egglog.py 50 200   # dimgraph's side
    python benchmarks/egraph_vs_egglog.py --egglog 50 200    # egglog's side (needs `pip install egglog`)

Both build the same random expression of n operations over three inputs (sums,
products, log(1 + x), log(exp(x)), x * 1, sin, -(-x), x * x) and saturate it with
the same algebra (x*1 -> x, log(1+x) -> log1p(x), log(exp(x)) -> x, -(-x) -> x,
x*x -> square(x); commutativity of + and *), then extract. dimgraph runs its
project rules (the `Pat` rules with their dtype guards) through the e-graph phase.
"""

import os
import random
import sys
import time


def expression(n, seed, lib):
    """The random expression with `lib`'s constructors (var, const, add, mul, log, exp, sin, neg)."""
    rng = random.Random(seed)
    pool = [lib["var"](name) for name in "abc"]
    for _ in range(n):
        v, w = rng.choice(pool), rng.choice(pool)
        k = rng.randrange(8)
        pool.append(
            [
                lambda: lib["add"](v, w),
                lambda: lib["mul"](v, w),
                lambda: lib["log"](lib["add"](lib["const"](1), v)),
                lambda: lib["log"](lib["exp"](v)),
                lambda: lib["mul"](v, lib["const"](1)),
                lambda: lib["sin"](v),
                lambda: lib["neg"](lib["neg"](v)),
                lambda: lib["mul"](v, v),
            ][k]()
        )
    total = pool[-1]
    for p in pool[-20:]:
        total = lib["add"](total, p)
    return pool[:3], total


def run_dimgraph(n):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import dimgraph as dg
    from dimgraph.core.fgraph import FunctionGraph
    from dimgraph.core.rewriting import rewrite_graph

    names = {}
    lib = {
        "var": lambda name: names.setdefault(name, dg.vector(name)),
        "const": lambda c: float(c),
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "log": dg.log,
        "exp": dg.exp,
        "sin": dg.sin,
        "neg": lambda a: -a,
    }
    inputs, out = expression(n, 0, lib)
    rules = ["merge", "constant_fold", "mul_one", "log1p", "log_exp", "neg_neg", "mul_self"]
    fgraph = FunctionGraph(inputs, [out])
    t0 = time.perf_counter()
    rewrite_graph(fgraph, {"egraph": True, "include": rules})
    total = time.perf_counter() - t0
    report = fgraph.rewrite_trace.egraph
    print(
        f"dimgraph n={n}: e-graph phase {report.seconds * 1e3:.1f} ms ({report.enodes} e-nodes, {report.status}), "
        f"rewrite_graph {total * 1e3:.1f} ms"
    )


def run_egglog(n):
    from egglog import EGraph, Expr, StringLike, function, i64Like, rewrite, vars_

    class Num(Expr):
        def __init__(self, value: i64Like) -> None: ...

        @classmethod
        def var(cls, name: StringLike) -> "Num": ...

        def __add__(self, other: "Num") -> "Num": ...

        def __mul__(self, other: "Num") -> "Num": ...

    @function
    def log(x: Num) -> Num: ...

    @function
    def exp(x: Num) -> Num: ...

    @function
    def log1p(x: Num) -> Num: ...

    @function
    def sin(x: Num) -> Num: ...

    @function
    def square(x: Num) -> Num: ...

    @function
    def neg(x: Num) -> Num: ...

    lib = {
        "var": Num.var,
        "const": Num,
        "add": lambda a, b: a + b,
        "mul": lambda a, b: a * b,
        "log": log,
        "exp": exp,
        "sin": sin,
        "neg": neg,
    }
    t0 = time.perf_counter()
    expr = expression(n, 0, lib)[1]  # dimgraph's graph is built before its clock starts: so is this
    t1 = time.perf_counter()
    egraph = EGraph()
    root = egraph.let("root", expr)
    a, b = vars_("a b", Num)
    egraph.register(
        rewrite(a + b).to(b + a),
        rewrite(a * b).to(b * a),
        rewrite(a * Num(1)).to(a),
        rewrite(log(Num(1) + a)).to(log1p(a)),
        rewrite(log(exp(a))).to(a),
        rewrite(neg(neg(a))).to(a),
        rewrite(a * a).to(square(a)),
    )
    egraph.run(30)
    egraph.extract(root)
    done = time.perf_counter()
    print(
        f"egglog n={n}: add + saturate + extract {(done - t1) * 1e3:.1f} ms (building the expression {(t1 - t0) * 1e3:.1f} ms)"
    )


if __name__ == "__main__":
    args = sys.argv[1:]
    use_egglog = "--egglog" in args
    for n in [int(a) for a in args if a != "--egglog"] or [50, 200]:
        (run_egglog if use_egglog else run_dimgraph)(n)
