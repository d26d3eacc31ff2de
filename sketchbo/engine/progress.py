"""Progress of a run on stderr: a bar redrawn in place on a terminal, plain lines in a log."""
from __future__ import annotations

import math
import shutil
import sys
import time


class Progress:
    """Per-round progress of a run on stderr, timed from the end of compilation.

    On a terminal: one line redrawn in place (carriage return) with a bar, t/T, the round, elapsed time
    and ETA, at most every 0.2 s, ended by a newline when the run finishes. Otherwise (a log file, a
    pipe, a batch job): a plain line every ``every_s`` seconds and at the end.

    The ETA extrapolates the rate of the current phase: the steps since the last [`mark`][] (a capacity growth, after
    which a step costs more) over the time since it, once the phase covers 1% of T; before that the rate since the start
    (the steps done since the step the clock started at: a resumed run's earlier steps took no time of this process).
    """

    BAR = 24  # bar width in characters

    def __init__(self, enabled: bool, label: str, T: int, every_s: float = 2.0):
        self.enabled, self.label, self.T = enabled, label, T
        try:
            self.tty = bool(enabled) and sys.stderr.isatty()
        except (AttributeError, ValueError):  # a replaced or closed stderr
            self.tty = False
        self.every_s = 0.2 if self.tty else every_s
        if self.tty:
            self.columns = shutil.get_terminal_size(fallback=(120, 24)).columns
        self.width = 0  # length of the last line drawn on the terminal
        self.restart()

    def restart(self, t: int = 0):
        """Start the clock at step ``t`` (after compilation, so that the ETA measures execution; t > 0 for a
        run resumed from a checkpoint)."""
        self.start = time.perf_counter()
        self.t_start = t
        self.last = -math.inf
        self.phase = (self.start, None)  # (time, t) where the current phase began; t None: at the start

    def mark(self, t: int):
        """A new phase begins at step ``t`` now (e.g. the run continues at larger capacities)."""
        self.phase = (time.perf_counter(), t)

    def _eta(self, now: float, t: int, elapsed: float) -> float:
        since, t0 = self.phase
        if t0 is not None and t - t0 >= 0.01 * self.T and now > since:
            return (now - since) * (self.T - t) / (t - t0)
        done = t - self.t_start
        return elapsed * (self.T - t) / done if done > 0 else float("nan")

    @staticmethod
    def _clock(seconds: float) -> str:
        if not math.isfinite(seconds):
            return "?"
        seconds = int(round(seconds))
        h, rest = divmod(seconds, 3600)
        return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60:02d}:{rest % 60:02d}"

    def __call__(self, t_min: int, rounds: int, final: bool = False):
        now = time.perf_counter()
        if not self.enabled or (not final and now - self.last < self.every_s):
            return
        self.last = now
        elapsed = now - self.start
        frac = min(max(t_min / self.T, 0.0), 1.0)
        eta = max(self._eta(now, min(max(t_min, 0), self.T), elapsed), 0.0)
        if not self.tty:
            print(f"[{self.label}] round {rounds}: t={t_min}/{self.T} ({100 * frac:.0f}%) "
                  f"elapsed {elapsed:.1f}s eta {eta:.1f}s", file=sys.stderr, flush=True)
            return
        filled = int(frac * self.BAR)
        line = (f"[{self.label}] |{'#' * filled}{'.' * (self.BAR - filled)}| {100 * frac:3.0f}% "
                f"t={t_min}/{self.T} round {rounds} elapsed {self._clock(elapsed)} eta {self._clock(eta)}")
        line = line[:max(self.columns - 1, 1)]
        pad = " " * max(self.width - len(line), 0)  # clear the rest of a longer previous line
        self.width = len(line)
        sys.stderr.write("\r" + line + pad + ("\n" if final else ""))
        sys.stderr.flush()
        if final:
            self.width = 0
