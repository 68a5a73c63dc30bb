"""Where backends keep compiled artifacts on disk, and why they may trust what they find there.

A cache directory is loaded code: whoever can write to it runs code in every
process that reads it. So every directory an artifact lives in is private: it
is created with mode 0700 and, when it already exists, used only if this user
owns it and nobody else may write to it. A directory that fails the check (or
cannot be written) is refused with a `CacheWarning`, and the backend uses
`$TMPDIR/dimgraph-<uid>/...` instead, checked the same way, or as a last resort
a fresh `mkdtemp` directory of this process.

Loading an artifact runs code (a pickle, machine code, a shared library), so a
digest stored beside it is not enough: whoever wrote the file could write the
digest too. Digests are HMACs under a per-user secret (`secret()`: random bytes
in `<cache root>/secret.key`, mode 0600), so a record copied from another
machine or user, or planted by something that cannot read this user's key, is
refused and rebuilt. Whoever can read the key can already run code as this user.

Artifacts are written to a temporary name, fsynced and renamed into place, so a
reader never sees half a file. A write the disk refuses (full, over quota,
read-only) is no error: `store` warns once per cache root with a `CacheWarning`
and this process stops writing there (`writes_refused`), so backends compile
without caching and reuse what the cache already holds; a reader still verifies what it loads against
the digest recorded when it was written (`content_digest`), and discards a damaged file (`discard`: warning naming it, then unlink) so the
backend rebuilds it instead of failing in every later process.

The root is `$DIMGRAPH_CACHE_DIR` (unset or empty: `$XDG_CACHE_HOME/dimgraph`,
else `~/.cache/dimgraph`).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
import threading
import warnings
from pathlib import Path

from dimgraph.errors import CacheWarning

_resolved: dict = {}  # (root, parts) -> the directory this process uses
_key_roots: dict = {}  # a directory from `private_dir` -> the root whose `secret.key` signs what it holds
_refused: set = set()  # cache roots whose disk refused a write: this process writes nothing more there
_lock = threading.Lock()


def cache_root() -> Path:
    """`$DIMGRAPH_CACHE_DIR`, or the per-user default when it is unset or empty.

    >>> import os
    >>> from unittest import mock
    >>> from dimgraph.backends.diskcache import cache_root
    >>> with mock.patch.dict(os.environ, {"DIMGRAPH_CACHE_DIR": ""}):
    ...     cache_root().name
    'dimgraph'
    """
    root = os.environ.get("DIMGRAPH_CACHE_DIR")
    if not root:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "dimgraph")
    return Path(root)


def private_dir(*parts: str) -> Path:
    """`cache_root()/parts...`, created private (0700), or a private fallback when refused (memoized)."""
    root = cache_root()
    key = (str(root), parts)
    found = _resolved.get(key)
    if found is not None:
        return found
    with _lock:
        found = _resolved.get(key)
        if found is None:
            found, key_root = _choose(root, parts)
            _resolved[key] = found
            _key_roots[str(found)] = key_root
    return found


def _choose(root: Path, parts):
    """(the directory to use, the root holding its key): `root/parts`, else the fallbacks."""
    why = _make_private(root, parts)
    if why is None:
        return root.joinpath(*parts), root
    fallback = Path(tempfile.gettempdir()) / f"dimgraph-{_uid()}"
    fallback_why = _make_private(fallback, parts)
    if fallback_why is None:
        chosen, key_root = fallback.joinpath(*parts), fallback
    else:
        why += f"; the fallback {fallback.joinpath(*parts)} too: {fallback_why}"
        chosen = key_root = Path(tempfile.mkdtemp(prefix="dimgraph-"))  # mode 0700, this process's own
    warnings.warn(
        f"dimgraph: not using the cache directory {root.joinpath(*parts)} ({why}); using {chosen}",
        CacheWarning,
        stacklevel=4,
    )
    return chosen, key_root


def _make_private(root: Path, parts) -> str | None:
    """Why `root/parts` cannot serve as a private cache directory, or None once it is one."""
    leaf = root.joinpath(*parts)
    try:
        leaf.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as e:
        return f"cannot create it: {e.strerror or e}"
    for path in (root, leaf):
        why = _not_private(path)
        if why is not None:
            return f"{path} {why}"
    if not os.access(leaf, os.W_OK | os.X_OK):
        return "it is not writable"
    return None


def _not_private(path: Path) -> str | None:
    st = path.stat()
    if not stat.S_ISDIR(st.st_mode):
        return "is not a directory"
    if st.st_uid != _uid():
        return f"is owned by uid {st.st_uid}, not by this user (uid {_uid()})"
    if st.st_mode & 0o022:
        return f"is writable by other users (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else 0


def write_atomic(path: Path, data: bytes):
    """Write `data` to `path` through a fsynced temporary file renamed into place."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def store(path: Path, data: bytes) -> bool:
    """`write_atomic`, or False when the disk refuses the write (then `writes_refused` and no more tries)."""
    if writes_refused():
        return False
    try:
        write_atomic(path, data)
    except OSError as e:
        refuse_writes(e)
        return False
    return True


def writes_refused() -> bool:
    """Whether the disk under `cache_root()` refused a write in this process (see `store`)."""
    return str(cache_root()) in _refused


def refuse_writes(error: OSError):
    """Stop writing under `cache_root()` for the rest of the process; warn the first time.

    >>> import errno, os, warnings
    >>> from unittest import mock
    >>> from dimgraph.backends import diskcache
    >>> with mock.patch.dict(os.environ, {"DIMGRAPH_CACHE_DIR": "/nonexistent/dimgraph-doc"}):
    ...     with warnings.catch_warnings(record=True) as caught:
    ...         warnings.simplefilter("always")
    ...         for _ in range(3):
    ...             diskcache.refuse_writes(OSError(errno.ENOSPC, "No space left on device"))
    ...     diskcache.writes_refused(), len(caught)
    (True, 1)
    """
    root = str(cache_root())
    with _lock:
        first = root not in _refused
        _refused.add(root)
    if first:
        warnings.warn(
            f"dimgraph: the cache under {root} cannot be written ({error.strerror or error}); "
            "compiling without caching for the rest of this process",
            CacheWarning,
            stacklevel=3,
        )


def fsync_file(path):
    """Flush a file another program wrote (a compiler's output) to disk before it is renamed into place."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def content_digest(key: str, data: bytes, directory=None) -> str:
    """The digest recorded for an artifact in `directory` (default: the cache root): an HMAC-SHA256,
    under the `secret` of that directory's root, binding the bytes to the key they were built for (a
    record made elsewhere, or forged without the secret, fails)."""
    return hmac.new(secret(directory), key.encode() + b"\0" + data, hashlib.sha256).hexdigest()


SECRET_NAME = "secret.key"
SECRET_BYTES = 32
_secrets: dict = {}  # key file -> its bytes, read once per process
_secret_lock = threading.Lock()


def secret(directory=None) -> bytes:
    """This user's key for the digests of artifacts in `directory` (a `private_dir`, or a folder in
    one; default: the cache root): `SECRET_BYTES` random bytes in `<its cache root>/secret.key`,
    mode 0600, made on first use. The root is the one the directory was chosen under, so a file
    is signed and checked with one key even when `$DIMGRAPH_CACHE_DIR` changes in between.

    A key file that others may read, that another user owns or that is damaged is replaced
    (with a `CacheWarning`): every record made under it then fails and is rebuilt. Where the
    key cannot be written (a full disk), this process uses a key of its own.
    """
    path = _key_root(Path(directory) if directory is not None else private_dir()) / SECRET_NAME
    found = _secrets.get(str(path))
    if found is None:
        with _secret_lock:
            found = _secrets.get(str(path))
            if found is None:
                found = _secrets[str(path)] = _read_or_make_secret(path)
    return found


def _key_root(directory: Path) -> Path:
    for d in (directory, *directory.parents):
        found = _key_roots.get(str(d))
        if found is not None:
            return found
    private_dir()
    return _key_roots[str(private_dir())]  # a folder of no cache root (a scratch build): the current root's


def _read_or_make_secret(path: Path) -> bytes:
    for _ in range(3):  # another process may be making it at the same moment
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            made = _make_secret(path)
            if made is not None:
                return made
            continue
        except OSError as e:
            why = f"it cannot be opened ({e.strerror or e})"
        else:
            with os.fdopen(fd, "rb") as f:
                st, data = os.fstat(f.fileno()), f.read(SECRET_BYTES + 1)
            why = _not_secret(st, data)
            if why is None:
                return data
        warnings.warn(
            f"dimgraph: replacing the cache key {path} ({why}); cached records made under it are rebuilt",
            CacheWarning,
            stacklevel=4,
        )
        try:
            os.unlink(path)
        except OSError:
            break
    return os.urandom(SECRET_BYTES)  # this process's own: what it writes is refused by the others


def _not_secret(st, data) -> str | None:
    if not stat.S_ISREG(st.st_mode):
        return "it is not a regular file"
    if st.st_uid != _uid():
        return f"it is owned by uid {st.st_uid}, not by this user (uid {_uid()})"
    if st.st_mode & 0o077:
        return f"other users may read or write it (mode {stat.S_IMODE(st.st_mode):o})"
    if len(data) != SECRET_BYTES:
        return f"it holds {len(data)} bytes, not {SECRET_BYTES}"
    return None


def _make_secret(path: Path) -> bytes | None:
    """A new key at `path` (None when another process made one first); a disk that refuses: a key of this process's own."""
    data = os.urandom(SECRET_BYTES)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)  # mode 0600
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.link(tmp, path)  # NOTE: fails when the file exists: the first process's key wins
        finally:
            os.unlink(tmp)
    except FileExistsError:
        return None
    except OSError as e:
        refuse_writes(e)
        return data
    return data


def discard(path: Path, why: str):
    """Warn that the cached `path` is damaged and remove it, so the caller rebuilds it."""
    warnings.warn(
        f"dimgraph: discarding the damaged cache file {path} ({why}); recompiling", CacheWarning, stacklevel=3
    )
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
