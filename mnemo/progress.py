"""Progress on a terminal: `PhaseProgress`, the `progress(phase, done, total)` callable
(mnemo.work.Progress) that the command line hands the library, one tqdm line per named phase.

It lives below the command line, beside the work it reports on: the library calls it while it
works (at the start of a phase, per document, per part), so those calls go to a module of the
orchestration layer, not up into the command line.  tqdm is imported on the first report."""

from __future__ import annotations

import sys
import time
from typing import IO, Any


#: Each progress phase (mnemo.work.Progress): its label and what it counts.  Bytes are
#: shown in MB and MB/s, like the summary lines.
PHASES: dict[str, tuple[str, str]] = {
    "count": ("counting", "B"),
    "tokenize": ("tokenizing", "B"),
    "merge": ("merging", " merges"),
}


class PhaseProgress:
    """Named phases on one terminal line each: counting and tokenizing show MB and MB/s,
    merging shows merges/s and an ETA.  Disabled (no output at all) when stderr is not a
    terminal.

    A phase's line ends with its own figures: the time from its first report (the library
    reports 0 when a phase starts) to its last, and the average rate over that time -- the
    same interval the summary line measures.  (tqdm's own last line used the time until the
    bar was closed, after merging: the counting rate of a training run came out half the
    summary's.)"""

    def __init__(self, enabled: bool, file: IO[str] | None = None) -> None:
        self.enabled = enabled
        self.file = file
        self.bars: dict[str, Any] = {}
        self.first: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.finished: set[str] = set()

    def __call__(self, phase: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.perf_counter()
        bar = self.bars.get(phase)
        if bar is None:
            from tqdm import tqdm

            for other in self.bars:  # phases run one after the other
                self._finish(other)
            label, unit = PHASES.get(phase, (phase, ""))
            if unit == "B":
                bar = tqdm(desc=label, unit="B", unit_scale=True, unit_divisor=1000, leave=True, file=self.file)
            else:
                bar = tqdm(desc=label, unit=unit, total=total or None, leave=True, file=self.file)
            self.bars[phase] = bar
            self.first[phase] = now
        self.last[phase] = now
        bar.update(done - bar.n)

    def _finish(self, phase: str) -> None:
        """Replace the phase's line by its final figures (see the class docstring)."""
        if phase in self.finished:
            return
        self.finished.add(phase)
        bar = self.bars[phase]
        final = dict(bar.format_dict)
        elapsed = self.last[phase] - self.first[phase]
        final["elapsed"] = elapsed
        final["rate"] = bar.n / elapsed if elapsed > 0 else None
        if (final.get("ncols") or 0) < 1:  # a terminal of unknown width reports -1: do not trim
            final["ncols"] = None
        bar.leave = False
        bar.close()
        print(bar.format_meter(**final), file=self.file if self.file is not None else sys.stderr, flush=True)

    def close(self) -> None:
        for phase in self.bars:
            self._finish(phase)
