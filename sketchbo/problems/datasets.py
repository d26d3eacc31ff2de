"""The Abalone and Cadata bandits of BBKB (Calandriello et al., ICML 2020), as fixed in
docs/protocols.md#finite-arm-protocol.

* Arms = the dataset rows (A = 4177 / 20640), d = 8 features. Abalone's sex is one numeric
  column, M = 1, F = 2, I = 3 (the LIBSVM encoding).
* Features scaled per column: ``scaling="minmax"`` (default, to [-1, 1], the LIBSVM ``_scale``
  convention), ``"zscore"`` (zero mean, unit variance) or ``"none"``.
* Reward f(x_i) = the row's target (Abalone: rings; Cadata: medianHouseValue; the last column of
  each file), standardised to zero mean and unit variance.
* Kernel k(x, x') = exp(-||x - x'||^2 / (2 sigma2)) with sigma2 = 5; ``noise_std=None`` so that the
  runner uses xi = sqrt(lam).

Data files are never part of the repository. [`find_data_file`][] looks, in order, in an explicit ``data_dir``, in
``$SKETCHBO_DATA_DIR`` and in the cache (``$SKETCHBO_CACHE_DIR`` or ``~/.cache/sketchbo``); otherwise it downloads the
file from its public source into the cache. Every file, wherever it is found or however obtained, must match the
published sha256 ([`SHA256`][]; docs/problems.md#data-files).
"""
from __future__ import annotations

import hashlib
import http.client
import os
import shutil
import tarfile
import tempfile
import urllib.request
from pathlib import Path

import numpy as np

from sketchbo.problems.base import Problem, check_problem
from sketchbo.problems.synthetic import check_noise_std, check_positive, standardise

ABALONE_FILE = "abalone.data"
CADATA_FILE = "cal_housing.data"
PIMA_FILE = "pima-indians-diabetes.csv"  # the GSSBO diabetes task (problems/diabetes.py); no download source

# Published checksums of the original files (docs/problems.md#data-files).
SHA256 = {
    ABALONE_FILE: "de37cdcdcaaa50c309d514f248f7c2302a5f1f88c168905eba23fe2fbc78449f",
    CADATA_FILE: "d3d8a1a722ae78f91134862727d27a70b1415e7d512a89140406248687f4b902",
    PIMA_FILE: "f463aa68699b14a786355b886c0714d8d0fd2a6eb4e4678d1643057b5f693ecc",
}
"""The published checksums of the original data files (docs/problems.md#data-files)."""

# Public sources; tests point these at file:// URLs.
DATA_URLS = {
    ABALONE_FILE: "https://archive.ics.uci.edu/ml/machine-learning-databases/abalone/abalone.data",
    CADATA_FILE: "https://www.dcc.fc.up.pt/~ltorgo/Regression/cal_housing.tgz",
}
"""The public sources of the data files that can be downloaded."""

# Files that are a member of a .tgz archive rather than the downloaded file itself.
ARCHIVE_MEMBERS = {CADATA_FILE: "CaliforniaHousing/cal_housing.data"}

DATA_DIR_ENV = "SKETCHBO_DATA_DIR"
CACHE_DIR_ENV = "SKETCHBO_CACHE_DIR"
DOWNLOAD_TIMEOUT_S = 60.0

SCALINGS = ("minmax", "zscore", "none")
# Problem.suggested: BBKB's protocol values on Abalone / Cadata (docs/protocols.md#finite-arm-protocol)
PAPER_SUGGESTED = {"lam": 0.2, "F": 20.0}
ABALONE_SEX_CODES = {"M": 1.0, "F": 2.0, "I": 3.0}
HOW_TO_PROVIDE = (
    "put the original file in a directory and pass data_dir=... (on the command line: problem.data_dir=...) "
    f"or set the environment variable {DATA_DIR_ENV} to that directory (sources and sha256 checksums: "
    "docs/problems.md#data-files)"
)


# ----------------------------------------------------------------------------- file lookup


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def cache_dir() -> Path:
    """``$SKETCHBO_CACHE_DIR`` if set, else ``~/.cache/sketchbo``."""
    env = os.environ.get(CACHE_DIR_ENV)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "sketchbo"


def _existing_dir(value, what: str) -> Path:
    if not isinstance(value, (str, os.PathLike)):
        raise ValueError(f"{what}={value!r} is invalid; it must be a directory path; {HOW_TO_PROVIDE}")
    path = Path(value).expanduser()
    if not path.is_dir():
        raise ValueError(f"{what}={str(value)!r} is not an existing directory; {HOW_TO_PROVIDE}")
    return path


def search_dirs(data_dir=None) -> list[Path]:
    """The directories searched, in order: data_dir, $SKETCHBO_DATA_DIR, the cache."""
    dirs = []
    if data_dir is not None:
        dirs.append(_existing_dir(data_dir, "data_dir"))
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        dirs.append(_existing_dir(env, DATA_DIR_ENV))
    dirs.append(cache_dir())
    return dirs


def verify_checksum(path: Path, filename: str) -> Path:
    """Return ``path`` if its sha256 is the published one, else a ValueError saying how to fix it."""
    expected = SHA256[filename]
    actual = sha256_of(path)
    if actual != expected:
        raise ValueError(
            f"data file {str(path)!r} has sha256 {actual}, expected {expected} (the published "
            f"checksum of {filename}); the file is corrupt or a different version. Replace it with "
            f"the original file: {HOW_TO_PROVIDE}"
        )
    return path


def _check_known(filename: str) -> None:
    if filename not in SHA256:
        raise ValueError(f"filename={filename!r} is not a known data file; choose one of {sorted(SHA256)}")


def find_data_file(filename: str, data_dir=None, download: bool = True) -> Path:
    """Path of a verified copy of ``filename``, downloading it into the cache if needed.

    Searches [`search_dirs`][]; the first copy found is checked against [`SHA256`][] (a mismatch is a ValueError). With
    nothing found and ``download`` true, the file is fetched from [`DATA_URLS`][] into [`cache_dir`][]; a failed
    download is a FileNotFoundError.
    """
    _check_known(filename)
    if not isinstance(download, (bool, np.bool_)):
        raise ValueError(f"download={download!r} is invalid; it must be true or false")
    dirs = search_dirs(data_dir)
    for directory in dirs:
        candidate = directory / filename
        if candidate.is_file():
            return verify_checksum(candidate, filename)
    searched = ", ".join(repr(str(d)) for d in dirs)
    if download and filename not in DATA_URLS:
        raise FileNotFoundError(
            f"data file {filename!r} was not found in any of [{searched}] and no public download source of "
            f"this exact file is known; {HOW_TO_PROVIDE}"
        )
    if not download:
        raise FileNotFoundError(
            f"data file {filename!r} was not found in any of [{searched}] and download=False; "
            f"{HOW_TO_PROVIDE}"
        )
    try:
        return download_data_file(filename, cache_dir())
    except OSError as err:
        raise FileNotFoundError(
            f"data file {filename!r} was not found in any of [{searched}] and downloading it from "
            f"{DATA_URLS[filename]} failed ({err}); {HOW_TO_PROVIDE}"
        ) from err


# ----------------------------------------------------------------------------- download


def _fetch(url: str, dest) -> None:
    """Copy ``url`` into the open file ``dest``; any transfer error becomes an OSError."""
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:
            shutil.copyfileobj(response, dest)
    except http.client.HTTPException as err:
        raise OSError(f"the transfer from {url} failed ({err!r})") from err


def _extract_member(archive: Path, member: str, dest) -> None:
    try:
        with tarfile.open(archive, "r:*") as tar:
            info = tar.getmember(member)
            source = tar.extractfile(info) if info.isfile() else None
            if source is None:
                raise OSError(f"archive member {member!r} is not a regular file")
            with source:
                shutil.copyfileobj(source, dest)
    except KeyError as err:
        raise OSError(f"the archive has no member {member!r}") from err
    except tarfile.TarError as err:
        raise OSError(f"the download is not a readable tar archive ({err})") from err


def _temp_path(directory: Path, filename: str, suffix: str) -> Path:
    fd, name = tempfile.mkstemp(dir=directory, prefix=f".{filename}.", suffix=suffix)
    os.close(fd)
    return Path(name)


def download_data_file(filename: str, directory: Path) -> Path:
    """Download ``filename`` into ``directory``, verify its sha256, then move it into place.

    Everything is written to temporary files in ``directory`` that are deleted on any failure, so
    no partial file ever remains; only a verified file is renamed (atomically) to its final name.
    Network or archive errors raise OSError; a checksum mismatch raises ValueError.
    """
    _check_known(filename)
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    url = DATA_URLS[filename]
    member = ARCHIVE_MEMBERS.get(filename)
    temps = [_temp_path(directory, filename, ".part")]
    try:
        if member is None:
            with open(temps[0], "wb") as dest:
                _fetch(url, dest)
        else:
            temps.append(_temp_path(directory, filename, ".archive.part"))
            with open(temps[1], "wb") as dest:
                _fetch(url, dest)
            with open(temps[0], "wb") as dest:
                _extract_member(temps[1], member, dest)
        expected, actual = SHA256[filename], sha256_of(temps[0])
        if actual != expected:
            raise ValueError(
                f"the {filename} downloaded from {url} has sha256 {actual}, expected {expected}; "
                f"nothing was saved. The source may have changed: {HOW_TO_PROVIDE}"
            )
        final = directory / filename
        os.replace(temps[0], final)
        temps.pop(0)
        return final
    finally:
        for temp in temps:
            temp.unlink(missing_ok=True)


# ----------------------------------------------------------------------------- parsing


def _check_columns(rows: np.ndarray, path: Path, ncols: int) -> np.ndarray:
    if rows.ndim != 2 or rows.shape[1] != ncols:
        raise ValueError(f"data file {str(path)!r} parsed to shape {rows.shape}; expected (n, {ncols})")
    return rows


def _abalone_row(line: str, lineno: int, path: Path) -> list[float]:
    fields = line.split(",")
    if fields[0] not in ABALONE_SEX_CODES:
        raise ValueError(
            f"data file {str(path)!r} line {lineno}: sex {fields[0]!r} is not one of "
            f"{sorted(ABALONE_SEX_CODES)}"
        )
    try:
        if len(fields) != 9:
            raise ValueError
        return [ABALONE_SEX_CODES[fields[0]]] + [float(v) for v in fields[1:]]
    except ValueError:
        raise ValueError(f"data file {str(path)!r} line {lineno}: {line[:80]!r} is not the sex and 8 numbers") from None


def load_abalone_raw(data_dir=None, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Unscaled Abalone features (4177, 8) with sex M=1, F=2, I=3, and the rings target (4177,)."""
    path = find_data_file(ABALONE_FILE, data_dir, download)
    try:
        text = path.read_text(encoding="ascii")
    except UnicodeDecodeError as err:
        raise ValueError(f"data file {str(path)!r} is not a text file ({err})") from None
    lines = [line for line in text.splitlines() if line.strip()]
    rows = np.array([_abalone_row(line, i + 1, path) for i, line in enumerate(lines)], dtype=np.float64)
    rows = _check_columns(rows, path, 9)
    return rows[:, :-1], rows[:, -1]


def load_cadata_raw(data_dir=None, download: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Unscaled California-housing features (20640, 8) and the medianHouseValue target (20640,)."""
    path = find_data_file(CADATA_FILE, data_dir, download)
    try:
        rows = np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)
    except ValueError as err:
        raise ValueError(f"data file {str(path)!r} is not a table of numbers ({err})") from None
    rows = _check_columns(rows, path, 9)
    return rows[:, :-1], rows[:, -1]


# ----------------------------------------------------------------------------- problems


def _check_scaling(scaling) -> str:
    if scaling not in SCALINGS:
        raise ValueError(f"scaling={scaling!r} is not a known feature scaling; choose one of {list(SCALINGS)}")
    return scaling


def scale_features(X: np.ndarray, scaling: str = "minmax") -> np.ndarray:
    """Per-column scaling: "minmax" to [-1, 1], "zscore" to zero mean / unit variance, or "none".

    A constant column maps to zeros under "minmax" and "zscore".
    """
    scaling = _check_scaling(scaling)
    X = np.asarray(X, dtype=np.float64)
    if scaling == "none":
        return X.copy()
    if scaling == "zscore":
        return np.stack([standardise(col) for col in X.T], axis=1)
    lo, hi = X.min(axis=0), X.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    return np.where(hi > lo, 2.0 * (X - lo) / span - 1.0, 0.0)


def _dataset_problem(name, X, y, scaling, sigma2, noise_std) -> Problem:
    kernel = {"name": "rbf", "sigma2": sigma2}
    return check_problem(Problem(name, scale_features(X, scaling), standardise(y), noise_std, kernel,
                                 suggested=dict(PAPER_SUGGESTED)))


def abalone(scaling="minmax", sigma2=5.0, noise_std=None, data_dir=None, download=True) -> Problem:
    """The Abalone bandit (docs/protocols.md#finite-arm-protocol): 4177 arms in d = 8, reward = standardised rings."""
    scaling, sigma2 = _check_scaling(scaling), check_positive("sigma2", sigma2)
    noise_std = check_noise_std(noise_std)
    X, y = load_abalone_raw(data_dir, download)
    return _dataset_problem("abalone", X, y, scaling, sigma2, noise_std)


def cadata(scaling="minmax", sigma2=5.0, noise_std=None, data_dir=None, download=True) -> Problem:
    """The Cadata bandit (docs/protocols.md#finite-arm-protocol): 20640 arms in d = 8, reward = standardised house
    value."""
    scaling, sigma2 = _check_scaling(scaling), check_positive("sigma2", sigma2)
    noise_std = check_noise_std(noise_std)
    X, y = load_cadata_raw(data_dir, download)
    return _dataset_problem("cadata", X, y, scaling, sigma2, noise_std)
