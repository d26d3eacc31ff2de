"""Plain-JSON values and atomic files: the only file writing of the core (checkpoints, ``Optimizer.save``).

A file is written to a temporary file beside it, fsynced, then renamed over the target, so a reader never
sees a half-written file. The experiment system (``sketchbo.cli.tracking``) writes its result files with the
same helpers.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import numpy as np


def to_jsonable(value):
    """``value`` with numpy arrays and scalars turned into lists and Python numbers."""
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return to_jsonable(value.tolist())
    if isinstance(value, np.generic):
        return value.item()
    return value


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_target(path) -> Path:
    """``path`` as a Path when a file may be written there atomically; ValueError naming the path when
    something other than a regular file stands there (a directory, a device, a socket, a link to one):
    the rename would replace it."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"{os.fspath(path)!r} exists and is not a regular file; refusing to replace it")
    return path


def atomic_write(path: Path, write) -> Path:
    """Call ``write(file)`` on a temporary file beside ``path``, fsync it, then rename it to ``path``
    ([`check_target`][] first: only a regular file is ever replaced)."""
    path = check_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp creates 0600; give the file ordinary permissions
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.remove(tmp)
        raise
    return path


def remove_temporaries(directory) -> list[Path]:
    """Delete the temporary files (``.<name>.<random>.tmp``) that an atomic write killed half-way (SIGKILL
    leaves no chance to clean up) left in ``directory``; return them. Call it only while no atomic write
    into ``directory`` is in flight."""
    stale = [p for p in Path(directory).glob(".*.*.tmp") if p.is_file()]
    for path in stale:
        path.unlink(missing_ok=True)
    return stale


def atomic_write_json(path, obj, indent: int = 2) -> Path:
    """Write ``obj`` (numpy values allowed) as JSON indented by ``indent`` to ``path`` atomically."""
    text = json.dumps(to_jsonable(obj), indent=indent, allow_nan=True) + "\n"
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_write_text(path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write(path, lambda fh: fh.write(text.encode("utf-8")))


def atomic_savez(path, **arrays) -> Path:
    """``np.savez(path, **arrays)`` atomically (``path`` is used as given, no ``.npz`` appended)."""
    return atomic_write(path, lambda fh: np.savez(fh, **arrays))



# ------------------------------------------------------------------------------------ plain JSON

def plain(value):
    """``value`` as it reads back from a JSON file (``summary.json``, a checkpoint's identity): JSON round trip."""
    return json.loads(json.dumps(to_jsonable(value), allow_nan=True))


def without_keys(config: dict, ignore) -> dict:
    """A copy of ``config`` without the dotted keys in ``ignore`` (e.g. ``"logger"``, ``"problem.data_dir"``)."""
    config = json.loads(json.dumps(config, allow_nan=True))
    for dotted in ignore:
        *parents, last = dotted.split(".")
        node = config
        for key in parents:
            node = node.get(key) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return config


def differences(a, b, prefix: str = "") -> list[str]:
    """The dotted names (``hyperparameters[0].lam``) at which two plain JSON values differ: dicts key by
    key, lists of the same length item by item, anything else as a whole."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            name = f"{prefix}.{key}" if prefix else str(key)
            out.extend([name] if key not in a or key not in b else differences(a[key], b[key], name))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [n for i, (x, y) in enumerate(zip(a, b)) for n in differences(x, y, f"{prefix}[{i}]")]
    return [] if a == b else [prefix or "<root>"]
