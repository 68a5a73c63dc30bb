"""Sharding on the jax backend: inputs placed over a 4-device CPU mesh give the unsharded results.

JAX fixes its device count when it starts, so the check runs in a fresh process
with `XLA_FLAGS=--xla_force_host_platform_device_count=4` and reports as JSON.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("jax")

SCRIPT = textwrap.dedent(
    """
    import json
    import pickle

    import jax
    import numpy as np
    from jax.sharding import PartitionSpec as P

    import dimgraph as dg

    report = {"devices": len(jax.devices())}
    rng = np.random.default_rng(0)

    # positional: rows of x over the mesh axis "data"
    x = dg.tensor("x", shape=(None, 3))
    w = dg.tensor("w", shape=(3,))
    z = dg.tanh(x) @ w
    outs = [z, dg.logsumexp(z), (x * x).sum(axis=0)]
    plain = dg.function([x, w], outs, backend="jax")
    sharded = dg.function([x, w], outs, backend="jax", shard={x: P("data", None)})
    on_device = dg.function([x, w], outs, backend="jax", shard={x: P("data")}, output="jax")
    for rows in (8, 6):  # 6 rows do not divide over 4 devices: placed replicated
        xv, wv = rng.normal(size=(rows, 3)), rng.normal(size=3)
        a, b = plain(xv, wv), sharded(xv, wv)
        report[f"positional_{rows}"] = all(np.allclose(p, q, rtol=1e-13, atol=1e-13) for p, q in zip(a, b))
        report[f"placed_{rows}"] = list(sharded._compiled.placement.sharding_for(0, xv.shape).spec)
        report[f"out_devices_{rows}"] = len(on_device(xv, wv)[0].sharding.device_set)

    # a 2 x 2 mesh given by the user, both axes of x sharded
    mesh = jax.make_mesh((2, 2), ("rows", "cols"))
    x2 = dg.tensor("x2", shape=(None, 4))
    out2 = [dg.exp(x2).sum(axis=1), (x2 @ dg.core.transpose(x2)).sum()]
    xv = rng.normal(size=(6, 4))
    a = dg.function([x2], out2, backend="jax")(xv)
    on_mesh = dg.function([x2], out2, backend="jax", shard={x2: ("rows", "cols")}, mesh=mesh)
    b = on_mesh(xv)
    report["mesh_2x2"] = all(np.allclose(p, q, rtol=1e-13) for p, q in zip(a, b))
    # it pickles: the mesh travels as device ids and axis names
    copy = pickle.loads(pickle.dumps(on_mesh))
    report["pickled_mesh"] = all(np.array_equal(p, q) for p, q in zip(b, copy(xv)))
    report["pickled_mesh_spec"] = list(copy._compiled.placement.sharding_for(0, xv.shape).spec)

    # labeled: the dim obs over "data", wherever it appears
    obs, k = dg.Dim("obs"), dg.Dim("k", size=2)
    y = dg.labeled("y", dims=(obs,))
    m = dg.labeled("m", dims=(k, obs))
    mu = dg.labeled("mu", dims=(k,))
    logp = (-0.5 * (y - m * mu) ** 2).sum()
    per_k = (m * y).sum("obs")
    plain = dg.function([y, m, mu], [logp, per_k], backend="jax")
    sharded = dg.function([y, m, mu], [logp, per_k], backend="jax", shard={obs: "data"})
    yv, mv, muv = rng.normal(size=12), rng.normal(size=(2, 12)), rng.normal(size=2)
    a, b = plain(yv, mv, muv), sharded(yv, mv, muv)
    report["labeled"] = bool(np.allclose(a[0], b[0], rtol=1e-13) and np.allclose(a[1].values, b[1].values, rtol=1e-13))
    report["labeled_dims"] = list(b[1].dims)
    report["labeled_specs"] = {str(k): str(v) for k, v in sharded._compiled.placement.specs.items()}
    print(json.dumps(report))
    """
)


def test_sharded_equals_unsharded_on_four_cpu_devices():
    env = dict(os.environ, XLA_FLAGS="--xla_force_host_platform_device_count=4", JAX_PLATFORMS="cpu")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["devices"] == 4
    assert report["positional_8"] and report["positional_6"]
    assert report["placed_8"] == ["data", None]
    assert report["placed_6"] == [None, None]
    assert report["out_devices_8"] == 4
    assert report["mesh_2x2"] and report["pickled_mesh"]
    assert report["pickled_mesh_spec"] == ["rows", "cols"]
    assert report["labeled"]
    assert report["labeled_dims"] == ["k"]
    assert report["labeled_specs"] == {"0": "('data',)", "1": "(None, 'data')"}
