"""The on-disk caches of the numba and c backends: a damaged, swapped or planted artifact never runs.

Each test gets its own cache root (`DIMGRAPH_CACHE_DIR` under `tmp_path`); "a later
process" is simulated by forgetting what this process loaded, so the backend has to
go back to the files.
"""

import os
import shutil
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

import dimgraph as dg
from dimgraph.backends import diskcache
from dimgraph.errors import CacheWarning

ROOT = str(Path(__file__).resolve().parents[2])


@pytest.fixture
def cache_root(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(root))
    return root


def _damage(path: Path, kind: str):
    data = path.read_bytes()
    if kind == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "shortened":
        path.write_bytes(data[: int(len(data) * 0.75)])
    elif kind == "random":
        path.write_bytes(np.random.default_rng(0).integers(0, 256, len(data), dtype=np.uint8).tobytes())
    elif kind == "byte":
        path.write_bytes(data[:-40] + bytes([data[-40] ^ 1]) + data[-39:])
    elif kind == "empty":
        path.write_bytes(b"")
    else:
        raise AssertionError(kind)


# ---------------------------------------------------------------- numba


@pytest.fixture
def numba_cache():
    pytest.importorskip("numba")
    from dimgraph.backends.numba import cache

    _forget_numba(cache)  # modules other tests of this process hold would skip the files these tests look at
    yield cache
    cache._LOADED.clear()
    cache._recent.clear()


def _forget_numba(cache):
    """What a new process would have: no module loaded."""
    cache._LOADED.clear()
    cache._recent.clear()


def _times_one_point_five():
    x = dg.tensor("x", shape=(None,))
    return dg.function([x], x * 1.5 + 0.25, backend="numba")


def test_numba_changed_code_in_cached_source_is_discarded(cache_root, numba_cache):
    # (The driver, which holds the constants, is never a file: kernels take them as arguments.)
    f = _times_one_point_five()
    assert f(np.array([2.0])).tolist() == [3.25]
    del f
    (kernel_file,) = [p for p in cache_root.rglob("k_*.py") if " * " in p.read_text()]
    text = kernel_file.read_text()
    kernel_file.write_text(text.replace(" * ", " / "))
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(kernel_file)):
        f = _times_one_point_five()
        out = f(np.array([2.0]))
    assert out.tolist() == [3.25]
    assert kernel_file.read_text() == text  # rewritten: the next process finds it whole


@pytest.mark.parametrize("kind", ["truncated", "shortened", "random", "empty", "byte"])
@pytest.mark.parametrize("pattern", ["k_*.py"])
def test_numba_damaged_generated_module_is_rewritten(cache_root, numba_cache, kind, pattern):
    _times_one_point_five()(np.array([1.0]))
    files = sorted(cache_root.rglob(pattern))
    assert files
    originals = {p: p.read_bytes() for p in files}
    for p in files:
        _damage(p, kind)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match="discarding the damaged cache file"):
        out = _times_one_point_five()(np.array([1.0, 2.0]))
    assert out.tolist() == [1.75, 3.25]
    assert {p: p.read_bytes() for p in files} == originals


@pytest.mark.parametrize("kind", ["truncated", "random", "empty", "byte"])
@pytest.mark.parametrize("pattern", ["*.nbc", "*.nbi"])
def test_numba_damaged_machine_code_is_discarded_and_recompiled(cache_root, numba_cache, kind, pattern):
    _times_one_point_five()(np.array([1.0]))
    files = [p for p in cache_root.rglob(pattern) if p.name.startswith(("g_", "k_"))]
    assert files
    for p in files:
        _damage(p, kind)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=r"\.nb[ic]"):
        f = _times_one_point_five()
        out = f(np.array([1.0, 2.0]))
    assert out.tolist() == [1.75, 3.25]
    _forget_numba(numba_cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)  # the recompiled code was saved whole
        assert _times_one_point_five()(np.array([4.0])).tolist() == [6.25]


def _jitted_affine(scale=1.5):
    x = dg.tensor("x", shape=(None,))
    return dg.function([x], dg.exp(x) * scale + 0.25, backend="numba", jit_graph=True)


def _site_records(cache_root):
    return sorted(cache_root.rglob("s_*.pkl"))


@pytest.mark.parametrize("kind", ["truncated", "shortened", "random", "empty", "byte"])
def test_numba_damaged_record_of_the_jitted_graphs_sites_is_discarded_and_the_graph_recompiled(
    cache_root, numba_cache, kind
):
    """The jitted graph calls its kernels through a table filled from the record of its call sites: a
    damaged record is discarded, the graph compiled again (its cached code is not used without one), and
    the record written afresh."""
    x = np.array([0.0, 1.0])
    assert _jitted_affine()(x).tolist() == (np.exp(x) * 1.5 + 0.25).tolist()
    (record,) = _site_records(cache_root)
    original = record.read_bytes()
    _damage(record, kind)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(record)):
        f = _jitted_affine()
        out = f(x)
    assert f._compiled.tiers.state == "jitted" and out.tolist() == (np.exp(x) * 1.5 + 0.25).tolist()
    assert record.read_bytes() == original
    _forget_numba(numba_cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        g = _jitted_affine()
        assert g(x).tolist() == out.tolist() and g._compiled.tiers.state == "jitted"


def test_numba_jitted_graph_cached_without_its_sites_record_is_compiled_again(cache_root, numba_cache):
    x = np.array([0.5, -1.0])
    want = (np.exp(x) * 1.5 + 0.25).tolist()
    assert _jitted_affine()(x).tolist() == want
    (record,) = _site_records(cache_root)
    record.unlink()
    _forget_numba(numba_cache)
    f = _jitted_affine()
    assert f(x).tolist() == want and f._compiled.tiers.state == "jitted"
    assert _site_records(cache_root) == [record]
    # a default function takes the cached graph at its first call only where the record is there too
    record.unlink()
    _forget_numba(numba_cache)
    x_ = dg.tensor("x", shape=(None,))
    lazy = dg.function([x_], dg.exp(x_) * 1.5 + 0.25, backend="numba")
    assert lazy(x).tolist() == want and lazy._compiled.tiers.state == "driver"


def test_numba_sites_record_of_another_graph_is_refused(cache_root, numba_cache):
    """A record copied under another graph's name fails its seal: its kernels' addresses are never taken."""
    x = np.array([1.0, 2.0])
    _jitted_affine(1.5)(x)
    (mine,) = _site_records(cache_root)
    _jitted_affine(-2.0)(x)
    (theirs,) = set(_site_records(cache_root)) - {mine}
    mine.write_bytes(theirs.read_bytes())
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(mine)):
        f = _jitted_affine(1.5)
        assert f(x).tolist() == (np.exp(x) * 1.5 + 0.25).tolist()
    assert f._compiled.tiers.state == "jitted"


def test_numba_machine_code_of_another_function_is_refused(cache_root, numba_cache):
    x = dg.tensor("x", shape=(None,))
    plus = dg.function([x], x + 1.0, backend="numba", rewrites="none")
    minus = dg.function([x], x - 1.0, backend="numba", rewrites="none")
    plus(np.ones(2)), minus(np.ones(2))
    (k_plus,) = set(plus._compiled.kernel_digests) - set(minus._compiled.kernel_digests)
    (k_minus,) = set(minus._compiled.kernel_digests) - set(plus._compiled.kernel_digests)
    pycache = next(cache_root.rglob("__pycache__"))
    (plus_data,) = pycache.glob(f"k_{k_plus}.*.nbc")
    (minus_data,) = pycache.glob(f"k_{k_minus}.*.nbc")
    shutil.copyfile(minus_data, plus_data)
    del plus, minus
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=plus_data.name):
        plus = dg.function([x], x + 1.0, backend="numba", rewrites="none")
        out = plus(np.array([1.0, 2.0]))
    assert out.tolist() == [2.0, 3.0]


def test_numba_helpers_cache_in_the_cache_dir_not_in_the_package(tmp_path):
    """A second process with a fresh cache dir writes nothing into the installed package."""
    script = textwrap.dedent(
        """
        import numpy as np, dimgraph as dg
        from dimgraph.backends.numba import runtime, cache
        x = dg.tensor("x", shape=(None, 3))
        i = dg.tensor("i", shape=(None,), dtype="int64")
        f = dg.function([x, i], [dg.exp(x).T * 2.0, x[i]], backend="numba")  # the gather kernel reshapes with `views`
        f(np.ones((2, 3)), np.array([1, 0]))
        paths = {d._cache._cache_path for d in vars(runtime).values() if hasattr(d, "_cache") and hasattr(d._cache, "_cache_path")}
        print(sorted(paths))
        """
    )
    package = Path(ROOT) / "dimgraph"
    before = {p: p.stat().st_mtime_ns for p in package.rglob("*.nb?")}
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=str(tmp_path / "c1"), PYTHONPATH=ROOT)
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert str(tmp_path / "c1") in proc.stdout and str(package) not in proc.stdout
    after = {p: p.stat().st_mtime_ns for p in package.rglob("*.nb?")}
    assert after == before
    written = {p.name.split(".")[0] for p in (tmp_path / "c1").rglob("*.nbi")}
    assert {"runtime", "views"} <= written


def test_empty_cache_dir_variable_means_unset(tmp_path, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert diskcache.cache_root() == tmp_path / "xdg" / "dimgraph"
    monkeypatch.chdir(tmp_path)
    assert diskcache.private_dir("probe").is_relative_to(tmp_path / "xdg")


# ---------------------------------------------------------------- c


@pytest.fixture
def c_build():
    from dimgraph.backends.c import build

    try:
        build.find_compiler()
    except dg.BackendUnavailable:
        pytest.skip("no C compiler")
    return build


_MARKER = "DIMGRAPH_TEST_CONSTRUCTOR_RAN"


def _c_source(value, marker=None):
    ctor = (
        f"#include <stdlib.h>\n#include <stdio.h>\n__attribute__((constructor)) static void planted(void) "
        f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
        if marker
        else ""
    )
    return f"{ctor}double answer(void) {{ return {value!r}; }}\n"


def _answer(lib):
    import ctypes

    lib.answer.restype = ctypes.c_double
    return lib.answer()


def _built(build, source):
    """The cached files of `source`, compiled but not loaded (a loaded library stays mapped by name)."""
    cmd = build.find_compiler()
    key = build.cache_key(source, cmd)
    build._compile(source, cmd, build.cache_dir(), key)
    return key, build.cache_dir() / f"{key}.so"


@pytest.mark.parametrize("kind", ["truncated", "shortened", "random", "empty", "byte"])
def test_c_damaged_library_is_discarded_and_recompiled(cache_root, c_build, kind):
    value = 1.0 + ["truncated", "shortened", "random", "empty", "byte"].index(kind) / 8
    source = _c_source(value)
    key, lib_path = _built(c_build, source)
    _damage(lib_path, kind)
    with pytest.warns(CacheWarning, match=str(lib_path)):
        lib, got_key = c_build.load(source)
    assert got_key == key and _answer(lib) == value
    assert lib_path.with_suffix(".sha256").read_text() == diskcache.content_digest(key, lib_path.read_bytes())


@pytest.mark.parametrize("with_record", [True, False])
def test_c_library_of_another_graph_is_refused(cache_root, c_build, with_record):
    mine, theirs = _c_source(2.5 + with_record), _c_source(-7.0)
    key, lib_path = _built(c_build, mine)
    _, other_path = _built(c_build, theirs)
    shutil.copyfile(other_path, lib_path)
    if with_record:
        shutil.copyfile(other_path.with_suffix(".sha256"), lib_path.with_suffix(".sha256"))
    with pytest.warns(CacheWarning, match="does not match"):
        lib, _ = c_build.load(mine)
    assert _answer(lib) == 2.5 + with_record


@pytest.mark.parametrize("kind", ["random", "truncated", "empty"])
def test_c_damaged_record_is_discarded_and_recompiled(cache_root, c_build, kind):
    """The digest file itself damaged (random bytes are not even text: it raised UnicodeDecodeError)."""
    value = 4.0 + ["random", "truncated", "empty"].index(kind) / 8
    source = _c_source(value)
    key, lib_path = _built(c_build, source)
    _damage(lib_path.with_suffix(".sha256"), kind)
    with pytest.warns(CacheWarning, match=str(lib_path)):
        lib, _ = c_build.load(source)
    assert _answer(lib) == value
    assert lib_path.with_suffix(".sha256").read_text() == diskcache.content_digest(key, lib_path.read_bytes())


def test_c_library_without_a_record_is_recompiled(cache_root, c_build):
    source = _c_source(3.75)
    _, lib_path = _built(c_build, source)
    lib_path.with_suffix(".sha256").unlink()
    with pytest.warns(CacheWarning, match="no digest was recorded"):
        lib, _ = c_build.load(source)
    assert _answer(lib) == 3.75


def test_c_function_after_damage_gives_right_values(cache_root, c_build):
    """The whole path: a compiled c function whose library is later truncated still runs right."""
    script = textwrap.dedent(
        """
        import warnings, numpy as np, dimgraph as dg
        warnings.simplefilter("always")
        x = dg.tensor("x", shape=(None,))
        f = dg.function([x], dg.sqrt(x) * 3.0 + 0.125, backend="c")
        print(f(np.array([4.0, 9.0])).tolist())
        """
    )
    env = dict(os.environ, PYTHONPATH=ROOT)
    first = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    for lib in (cache_root / "c").glob("*.so"):
        _damage(lib, "shortened")
    again = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr  # before: SIGBUS (-7)
    assert again.stdout.strip() == "[6.125, 9.125]"
    assert "discarding the damaged cache file" in again.stderr


# ---------------------------------------------------------------- directories


@pytest.fixture
def fresh_dirs(monkeypatch, tmp_path):
    monkeypatch.setattr(diskcache, "_resolved", {})
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    return tmp_path


def _mode(path):
    return stat.S_IMODE(path.stat().st_mode)


def test_cache_dirs_are_created_private(fresh_dirs, monkeypatch):
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(fresh_dirs / "root"))
    path = diskcache.private_dir("c")
    assert path == fresh_dirs / "root" / "c" and _mode(path) == 0o700


def _other_owner(path):
    if os.getuid() != 0:
        pytest.skip("changing a directory's owner needs root")
    os.chown(path, 65534, -1)


@pytest.mark.parametrize("how", ["mode 777", "other owner", "other owner of the root"])
def test_a_cache_dir_others_control_is_refused(fresh_dirs, monkeypatch, how):
    root = fresh_dirs / "root"
    planted = root / "c"
    planted.mkdir(parents=True)
    if how == "mode 777":
        planted.chmod(0o777)
    elif how == "other owner":
        _other_owner(planted)
    else:
        _other_owner(root)
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(root))
    with pytest.warns(CacheWarning, match=str(planted)):
        path = diskcache.private_dir("c")
    assert path == fresh_dirs / "tmp" / f"dimgraph-{os.getuid()}" / "c"
    assert _mode(path) == 0o700 and path.stat().st_uid == os.getuid()


def test_a_planted_fallback_dir_is_refused_too(fresh_dirs, monkeypatch, c_build):
    """An unusable configured dir and another user's `$TMPDIR/dimgraph-<uid>/c` with a planted
    library under the right key: the library is never loaded (its constructor never runs)."""
    not_a_dir = fresh_dirs / "file"
    not_a_dir.write_text("")
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(not_a_dir))
    planted = fresh_dirs / "tmp" / f"dimgraph-{os.getuid()}" / "c"
    planted.mkdir(parents=True)
    planted.chmod(0o777)
    planted.parent.chmod(0o777)
    marker = fresh_dirs / "constructor-ran"
    honest, evil = _c_source(5.5), _c_source(5.5, marker=str(marker))
    cmd = c_build.find_compiler()
    key = c_build.cache_key(honest, cmd)
    c_build._compile(evil, cmd, planted, "evil")
    os.replace(planted / "evil.so", planted / f"{key}.so")
    os.replace(planted / "evil.sha256", planted / f"{key}.sha256")
    with pytest.warns(CacheWarning, match="writable by other users"):
        lib, _ = c_build.load(honest)
    assert _answer(lib) == 5.5 and not marker.exists()
    used = c_build.cache_dir()
    assert used.parent != planted.parent and _mode(used) == 0o700


# ---------------------------------------------------------------- memory


def test_numba_generated_modules_are_released_with_their_function(cache_root, numba_cache):
    """Generated modules stay out of `sys.modules`; what only a dropped function used is released.

    (Numba itself never frees a dispatcher's machine code: about 1 MiB per distinct jitted
    function, dimgraph's or plain `numba.njit`; kernels shared by graphs cost it once.)
    """
    import gc
    import weakref

    x = dg.tensor("x", shape=(None,))
    graphs = []
    before = set(sys.modules)  # earlier tests' object-mode kernels stay there on purpose (`cache.load_module`)
    for k in range(5):
        f = dg.function([x], dg.tanh(x) * (k + 0.5) + dg.exp(x * (k + 1.0)).sum(), backend="numba")
        assert f(np.array([0.0])).tolist() == [1.0]
        graphs.append(weakref.ref(f._compiled.fast))  # the generated driver (kernels stay: Numba keeps them)
        del f
    numba_cache._recent.clear()
    gc.collect()
    assert all(ref() is None for ref in graphs)
    assert not [name for name in set(sys.modules) - before if name.startswith("dimgraph_generated_")]


def test_a_dropped_function_is_released_on_every_backend(backend):
    """Nothing keeps a dropped function or its compiled form (registries, closures, jit caches):
    compiling and dropping 100 distinct functions grew jax by 7 KiB each, numba by Numba's own
    machine code only (benchmarks/README.md, "Memory of dropped functions")."""
    import gc
    import weakref

    x = dg.tensor("x", shape=(None,))
    f = dg.function([x], dg.tanh(x) * 2.5 + dg.exp(x).sum(), backend=backend)
    assert f(np.array([0.0])).tolist() == [1.0]
    refs = [weakref.ref(f), weakref.ref(f._compiled), weakref.ref(f._compiled.run)]
    del f
    gc.collect()
    assert [ref() for ref in refs] == [None, None, None]


_OBJMODE_LOOP = """
import numpy as np, dimgraph as dg
W = dg.tensor("W", shape=(3, 3)); x0 = dg.tensor("x0", shape=(3,))
final, _ = dg.scan(lambda x: dg.tanh(dg.core.einsum("ij,j->i", W, x)), init=x0, n_steps=4)   # einsum: object mode in the body
print(dg.function([W, x0], final, backend="numba")(np.eye(3) * 0.5, np.ones(3)).tolist())
"""


def test_object_mode_code_in_a_loop_body_runs_from_a_warm_cache(tmp_path):
    """Numba finds the globals of cached object-mode code by module name: the second process ran into a NameError."""
    env = dict(os.environ, DIMGRAPH_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    x = np.ones(3)
    for _ in range(4):
        x = np.tanh(0.5 * x)
    for run in ("cold", "warm"):
        proc = subprocess.run(
            [sys.executable, "-c", _OBJMODE_LOOP], env=env, capture_output=True, text=True, timeout=300
        )
        assert proc.returncode == 0, f"{run} process failed:\n{proc.stderr[-2000:]}"
        np.testing.assert_allclose(eval(proc.stdout.strip().splitlines()[-1]), x)


# ---------------------------------------------------------------- a disk that refuses writes


@pytest.fixture
def full_disk(cache_root, monkeypatch):
    """A full disk under the cache root: its directories exist (made before it filled), and every
    file or directory created there from now on fails with ENOSPC."""
    import builtins
    import errno

    from dimgraph.backends.numba import cache as numba_cache_module

    for parts in ((numba_cache_module.version_tag(),), ("c",), ("warm",)):
        diskcache.private_dir(*parts)
    prefix = str(cache_root) + os.sep
    real_open, real_os_open, real_mkdir = builtins.open, os.open, os.mkdir

    def under(path):
        return isinstance(path, (str, bytes, os.PathLike)) and os.path.abspath(os.fsdecode(path)).startswith(prefix)

    def refuse(path):
        raise OSError(errno.ENOSPC, "No space left on device", os.fsdecode(path))

    def open_(file, mode="r", *args, **kwargs):
        if any(c in mode for c in "wax+") and under(file):
            refuse(file)
        return real_open(file, mode, *args, **kwargs)

    def os_open(path, flags, *args, **kwargs):
        if flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT) and under(path):
            refuse(path)
        return real_os_open(path, flags, *args, **kwargs)

    def mkdir(path, *args, **kwargs):
        if under(path) and not os.path.isdir(path):
            refuse(path)
        return real_mkdir(path, *args, **kwargs)

    files_before = sorted(p for p in cache_root.rglob("*") if p.is_file())
    monkeypatch.setattr(builtins, "open", open_)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(os, "mkdir", mkdir)
    yield cache_root
    monkeypatch.undo()
    assert sorted(p for p in cache_root.rglob("*") if p.is_file()) == files_before  # nothing was written


def test_a_full_disk_compiles_without_caching_and_warns_once(backend, full_disk):
    """numba failed with `OSError: [Errno 28] No space left on device` (`_save_data`); every backend
    now computes, and the ones that write (numba, c) warn once for the whole process."""
    if backend == "numba":
        from dimgraph.backends.numba import cache

        _forget_numba(cache)  # kernels this process already holds would write nothing
    x = dg.tensor("x", shape=(None,))
    g = dg.Dim("g", coords=["a", "b"])
    y = dg.labeled("y", dims=(g,))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [dg.function([x], x * k + 0.25, backend=backend)(np.array([2.0, 4.0])).tolist() for k in (1.5, 2.5)]
        outs.append(dg.function([y], (y * 3.5).sum(), backend=backend)(np.array([1.0, 2.0])).values.tolist())
    assert outs == [[3.25, 6.25], [5.25, 10.25], 10.5]
    messages = [str(w.message) for w in caught if issubclass(w.category, CacheWarning)]
    assert len(messages) == (1 if backend in ("numba", "c") else 0), messages
    assert all("No space left on device" in m and "compiling without caching" in m for m in messages)


def test_a_full_disk_still_loads_what_the_cache_holds(cache_root):
    """Reading goes on: a function cached before the disk filled loads from the cache (no compile)."""
    from dimgraph.backends.c import build

    x = dg.tensor("x", shape=(None,))
    dg.function([x], dg.exp(x) * 0.125, backend="c")
    build._loaded.clear()
    loaded = build.stats["loaded_from_disk"]
    with pytest.warns(CacheWarning, match="compiling without caching"):
        diskcache.refuse_writes(OSError(28, "No space left on device"))
    f = dg.function([x], dg.exp(x) * 0.125, backend="c")
    assert f(np.array([0.0])).tolist() == [0.125]
    assert build.stats["loaded_from_disk"] == loaded + 1


# ---------------------------------------------------------------- warm-start records


def _labeled_scaled(scale):
    g = dg.Dim("g", coords=["a", "b"])
    x = dg.labeled("x", dims=(g,))
    return dg.function([x], x * scale + 0.5, backend="numba")


def _records(cache_root):
    return sorted(cache_root.rglob("w_*.pkl"))


@pytest.mark.parametrize("kind", ["truncated", "shortened", "random", "empty", "byte"])
def test_damaged_warm_start_record_is_discarded_and_recompiled(cache_root, numba_cache, kind):
    _labeled_scaled(3.0)(np.array([1.0, 2.0]))
    (record,) = _records(cache_root)
    original = record.read_bytes()
    _damage(record, kind)
    with pytest.warns(CacheWarning, match=str(record)):
        f = _labeled_scaled(3.0)
    assert "warm start" not in f.timings  # compiled the usual way
    assert f(np.array([1.0, 2.0])).values.tolist() == [3.5, 6.5]
    assert record.read_bytes() == original  # written afresh: the next process starts warm
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        again = _labeled_scaled(3.0)
    assert "warm start" in again.timings and again(np.array([0.0, 1.0])).values.tolist() == [0.5, 3.5]


@pytest.mark.parametrize("header", ["theirs", "recomputed without the key"])
def test_warm_start_record_of_another_graph_never_runs(cache_root, numba_cache, header):
    """A record copied under another graph's name (a planted file) is refused, even with a digest
    of its own bytes in front: the recorded digest binds the bytes to the key they were written for."""
    _labeled_scaled(3.0)(np.array([1.0, 0.0]))
    (mine,) = _records(cache_root)
    _labeled_scaled(-7.0)(np.array([1.0, 0.0]))
    (theirs,) = set(_records(cache_root)) - {mine}
    data = theirs.read_bytes()
    if header != "theirs":
        import hashlib

        payload = data[64:]
        data = hashlib.sha256(payload).hexdigest().encode() + payload
    mine.write_bytes(data)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(mine)):
        f = _labeled_scaled(3.0)
    assert f(np.array([1.0, 2.0])).values.tolist() == [3.5, 6.5]


def test_warm_start_records_live_in_a_private_dir(cache_root, numba_cache):
    _labeled_scaled(1.5)(np.array([1.0, 0.0]))
    (record,) = _records(cache_root)
    assert stat.S_IMODE(record.parent.stat().st_mode) == 0o700


def test_a_record_planted_with_a_valid_plain_checksum_is_refused(cache_root, numba_cache):
    """Issue 28 row 7: a record with a correct SHA-256 of (key, payload) in front ran when loaded (the
    checksum caught damage, not tampering). Digests are now HMACs under the user's key: it is refused."""
    import hashlib

    _labeled_scaled(3.0)(np.array([1.0, 0.0]))
    (mine,) = _records(cache_root)
    _labeled_scaled(-7.0)(np.array([1.0, 0.0]))
    (theirs,) = set(_records(cache_root)) - {mine}
    payload = theirs.read_bytes()[64:]
    key = mine.name[len("w_") : -len(".pkl")]
    mine.write_bytes(hashlib.sha256(key.encode() + b"\0" + payload).hexdigest().encode() + payload)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(mine)):
        f = _labeled_scaled(3.0)
    assert "warm start" not in f.timings and f(np.array([1.0, 2.0])).values.tolist() == [3.5, 6.5]


def test_a_record_copied_from_another_cache_is_refused(tmp_path, monkeypatch, numba_cache):
    """Another user's or machine's cache has another key: its records (and machine code) fail there."""
    elsewhere, here = tmp_path / "elsewhere", tmp_path / "here"
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(elsewhere))
    _labeled_scaled(2.0)(np.array([1.0, 0.0]))
    monkeypatch.setenv("DIMGRAPH_CACHE_DIR", str(here))
    _forget_numba(numba_cache)
    _labeled_scaled(5.0)  # makes `here` with a key of its own
    (record,) = _records(elsewhere)
    planted = here / record.relative_to(elsewhere)
    shutil.copyfile(record, planted)
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=str(planted)):
        f = _labeled_scaled(2.0)
    assert "warm start" not in f.timings and f(np.array([1.0, 2.0])).values.tolist() == [2.5, 4.5]
    _forget_numba(numba_cache)
    with warnings.catch_warnings():
        warnings.simplefilter("error", CacheWarning)
        assert "warm start" in _labeled_scaled(2.0).timings  # rebuilt under this cache's key


def test_the_cache_key_is_private_and_replaced_when_exposed(cache_root, numba_cache):
    _labeled_scaled(4.0)(np.array([1.0, 0.0]))
    key_file = cache_root / diskcache.SECRET_NAME
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600 and len(key_file.read_bytes()) == diskcache.SECRET_BYTES
    old = key_file.read_bytes()
    key_file.chmod(0o644)  # others could have read it: records made under it can no longer be trusted
    diskcache._secrets.clear()
    _forget_numba(numba_cache)
    with pytest.warns(CacheWarning, match=r"replacing the cache key .*mode 644"):
        f = _labeled_scaled(4.0)
    assert "warm start" not in f.timings and f(np.array([1.0, 2.0])).values.tolist() == [4.5, 8.5]
    assert key_file.read_bytes() != old and stat.S_IMODE(key_file.stat().st_mode) == 0o600
