"""Run the jobs that ``scripts/reproduce.py --export`` wrote, without Hydra (a machine with JAX only).

The accelerator machines have JAX, optax and chex but not Hydra, so ``sketchbo-run`` cannot start there.
``reproduce.py --export FILE`` composes the pending jobs of the selected figures here (their resolved
configs, result directories relative to the results root and ``config.yaml`` texts); this script runs each
with ``sketchbo.cli.jobs.run_job``, the code ``sketchbo-run`` runs after composition, and writes the same files.
Copied into the results root here, they are complete results for ``reproduce.py`` and the plot scripts::

    python scripts/reproduce.py paper --only gssbo_fig2 --seeds 50 --export .device/jobs.json problem=hartmann6
    # there (.device/ git-ignored and carried), results in one archive: job directories have '=' and ',' in
    # their names, which a machine's file transfer may refuse
    PYTHONPATH=. python scripts/run_jobs.py .device/jobs.json --results /tmp/r --stop-after 480 \
        --archive "$OUT/results.tar.gz"
    tar -xzf results.tar.gz -C results/                                                      # here

Complete jobs under ``--results`` are skipped. A comparison's (``algorithm=compare``) members are jobs of
their own; its ``comparison.json`` is written once they are all complete. ``--archive`` is rewritten after
every finished job, every ``--archive-every`` seconds while a job runs (default 60) and at the end, with
the jobs' directories as they are (checkpoints included, temporaries of half-done writes left out), so
extracting an archive brought back into ``--results`` before the next call continues where the last call
stopped: a job that a machine's time limit kills half-way resumes from its checkpoint (``checkpoint_every``
rounds) as of the last archive. Files are replaced atomically (renamed into place), so an archive written
beside a running job holds each file either before or after a write, never half of one. ``--stop-after S``
starts no job once S seconds have passed (a running job continues), for machines lent with a time limit.
Bad input (a missing or malformed file, jobs of different dtypes) exits with status 2 and one line on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tarfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

PROG = "run_jobs.py"


def fail(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    sys.exit(2)


def load_jobs(path: Path) -> list[dict]:
    """The ``jobs`` of an export file; SystemExit(2) naming what is wrong."""
    try:
        jobs = json.loads(path.read_text(encoding="utf-8"))["jobs"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        fail(f"cannot read the jobs of {str(path)!r} ({type(err).__name__}: {err}); "
             "write it with scripts/reproduce.py --export")
    for i, job in enumerate(jobs):
        if not isinstance(job, dict) or not isinstance(job.get("dir"), str) or not isinstance(job.get("config"), dict):
            fail(f"{str(path)!r}: job {i} has no 'dir' (str) and 'config' (dict)")
        if Path(job["dir"]).is_absolute() or ".." in Path(job["dir"]).parts:
            fail(f"{str(path)!r}: job {i} has dir={job['dir']!r}; it must be relative to the results root")
    dtypes = sorted({str(job["config"].get("dtype")) for job in jobs})
    if len(dtypes) > 1:
        fail(f"{str(path)!r} mixes dtypes {dtypes}; export the jobs of each dtype to their own file")
    return jobs


def _temporary(name: str) -> bool:
    """An atomic write's temporary (``.<name>.<random>.tmp``, sketchbo.cli.tracking), incomplete by definition."""
    return name.startswith(".") and name.endswith(".tmp")


def _add_tree(tar: tarfile.TarFile, root: Path, arcname: str) -> None:
    """Add ``root`` under ``arcname``: each file through one open descriptor (its size from ``fstat``), so a
    file renamed over meanwhile is archived whole as it was when opened; files gone meanwhile are skipped."""
    for here, dirs, files in os.walk(root):
        dirs.sort()
        rel = Path(here).relative_to(root)
        name = arcname if rel == Path(".") else f"{arcname}/{rel.as_posix()}"
        tar.addfile(tar.gettarinfo(here, arcname=name))
        for file in sorted(f for f in files if not _temporary(f)):
            try:
                handle = open(Path(here) / file, "rb")
            except FileNotFoundError:  # deleted after the listing (a checkpoint once the results are written)
                continue
            with handle:
                tar.addfile(tar.gettarinfo(arcname=f"{name}/{file}", fileobj=handle), handle)


def write_archive(path: Path, results: Path, jobs: list[dict]) -> None:
    """A gzipped tar of the jobs' directories that exist under ``results``, named by their ``dir``, and of
    their comparisons' ``comparison.json``; written to a temporary file beside ``path`` and renamed (never
    half-written)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for job in jobs:
            if (results / job["dir"]).is_dir():
                _add_tree(tar, results / job["dir"], job["dir"])
        for directory in sorted({job["comparison"] for job in jobs if job.get("comparison")}):
            if (results / directory / "comparison.json").is_file():
                tar.add(results / directory / "comparison.json", arcname=f"{directory}/comparison.json")
    os.replace(tmp, path)


class Archiver:
    """Writes the archive on demand and, while entered, every ``every`` seconds from a thread (one write at a
    time); a failed periodic write is reported on stderr and tried again at the next period."""

    def __init__(self, path: Path | None, results: Path, jobs: list[dict], every: float):
        self.path, self.results, self.jobs, self.every = path, results, jobs, every
        self._lock, self._stop, self._thread = threading.Lock(), threading.Event(), None

    def write(self) -> None:
        if self.path is None:
            return
        with self._lock:
            write_archive(self.path, self.results, self.jobs)

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            try:
                self.write()
            except OSError as err:
                print(f"{PROG}: warning: archive not written ({err}); trying again in {self.every:g} s",
                      file=sys.stderr, flush=True)

    def __enter__(self) -> "Archiver":
        if self.path is not None:
            self._thread = threading.Thread(target=self._loop, name="archive", daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self._thread is not None:
            self._stop.set()
            self._thread.join()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    parser.add_argument("file", type=Path, help="the JSON written by scripts/reproduce.py --export")
    parser.add_argument("--results", type=Path, default=REPO / "results",
                        help="results root: job i goes to <results>/<its dir> (default: results/ in the repository)")
    parser.add_argument("--stop-after", type=float, default=None, metavar="S",
                        help="start no job once S seconds have passed (a running job continues)")
    parser.add_argument("--archive", type=Path, default=None, metavar="FILE",
                        help="also write the jobs' directories to this .tar.gz (after every finished job, "
                             "every --archive-every seconds and at the end)")
    parser.add_argument("--archive-every", type=float, default=60.0, metavar="S",
                        help="seconds between two writes of --archive while a job runs (default 60)")
    args = parser.parse_args(argv)
    if args.stop_after is not None and not args.stop_after >= 0:
        parser.error(f"--stop-after {args.stop_after}: give a number of seconds >= 0")
    if not args.archive_every > 0:
        parser.error(f"--archive-every {args.archive_every}: give a number of seconds > 0")
    jobs = load_jobs(args.file)

    import jax

    if jobs and jobs[0]["config"].get("dtype") == "float64":
        jax.config.update("jax_enable_x64", True)
    from sketchbo.cli import jobs as job_runner
    from sketchbo.engine.compile_cache import requested_dir
    from sketchbo.engine.program import enable_compilation_cache

    cache = next((job["config"].get("compile_cache") for job in jobs if job["config"].get("compile_cache")), None)
    enable_compilation_cache(requested_dir(str(cache)) if cache else None)  # no job names one: off
    t0 = time.perf_counter()
    with Archiver(args.archive, args.results, jobs, args.archive_every) as archiver:
        ran, skipped = run_all(jobs, args, job_runner, t0, archiver)
        write_comparisons(jobs, args.results, job_runner)
        archiver.write()
    print(f"{ran} job(s) run, {skipped} complete before, {len(jobs)} in {args.file} "
          f"({time.perf_counter() - t0:.0f} s; {jax.devices()[0].platform})", flush=True)
    return 0


def write_comparisons(jobs: list[dict], results: Path, job_runner) -> None:
    """``comparison.json`` of each comparison (``algorithm=compare``; its members' jobs name it) whose members
    are all complete, as ``sketchbo-run`` writes it."""
    groups: dict[str, list[dict]] = {}
    for job in jobs:
        if job.get("comparison"):
            groups.setdefault(job["comparison"], []).append(job)
    for directory, members in groups.items():
        summaries = [job_runner.stored_result(results / m["dir"], m["config"])[0] for m in members]
        if all(s is not None for s in summaries):
            config = members[0]["config"]
            job_runner.write_comparison(results / directory, int(config["T"]), int(config["n_seeds"]),
                                        [m["config"]["algorithm"]["name"] for m in members], summaries)


def run_all(jobs: list[dict], args, job_runner, t0: float, archiver: Archiver) -> tuple[int, int]:
    """Run the jobs not complete under ``args.results`` in order; (run, skipped)."""
    ran = skipped = 0
    for i, job in enumerate(jobs):
        directory = args.results / job["dir"]
        label = job.get("label", job["dir"])
        if job_runner.completed(directory, job["config"]) is not None:
            skipped += 1
            continue
        elapsed = time.perf_counter() - t0
        if args.stop_after is not None and elapsed >= args.stop_after:
            print(f"stopping after {elapsed:.0f} s (--stop-after {args.stop_after:g}): "
                  f"{len(jobs) - i} job(s) not started", flush=True)
            break
        print(f"[{i + 1}/{len(jobs)}] {label} -> {directory}", flush=True)
        start = time.perf_counter()
        try:
            job_runner.run_job(job["config"], directory, config_text=job.get("config_text"))
        except (ValueError, OSError) as err:
            fail(f"{label}: {err}")
        ran += 1
        print(f"[{i + 1}/{len(jobs)}] done in {time.perf_counter() - start:.0f} s", flush=True)
        archiver.write()
    return ran, skipped


if __name__ == "__main__":
    sys.exit(main())
