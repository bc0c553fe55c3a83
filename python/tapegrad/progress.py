"""The training progress line of Trainer.fit(progress=True): a bar that updates in place.

In a terminal (stdout a TTY) one line is redrawn with a carriage return; in a Jupyter notebook one
output area is updated (IPython's display handle); elsewhere (a pipe, a log file) a line is
printed per evaluation only, so logs stay readable. Every evaluation also leaves a permanent line.
tokens/s is the rate over the last `window` steps (tokens over their summed step times), not one
step's instantaneous rate, which swings with whatever else the machine runs.
"""
import collections
import sys
import time


def _in_notebook():
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except AttributeError:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def _clock(seconds):
    seconds = int(max(seconds, 0))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}" if seconds >= 3600 else \
        f"{seconds // 60}:{seconds % 60:02d}"


class Progress:
    def __init__(self, total, window=20, min_interval=0.2, width=24, stream=None, mode=None):
        self.total, self.width, self.min_interval = max(int(total), 1), width, min_interval
        self.stream = stream or sys.stdout
        self.mode = mode or ("notebook" if _in_notebook() else "tty" if getattr(self.stream, "isatty", lambda: False)()
                             else "lines")
        self.recent = collections.deque(maxlen=window)  # (tokens, seconds) of the last steps
        self.val = None
        self.started = time.monotonic()
        self.last_draw = 0.0
        self.first_step = None
        self.handle = None
        self.line = ""

    def tokens_per_s(self):
        tokens = sum(t for t, _ in self.recent)
        seconds = sum(s for _, s in self.recent)
        return tokens / seconds if seconds > 0 else 0.0

    def render(self, d):
        step = d["step"]
        done = min(step / self.total, 1.0)
        filled = int(round(done * self.width))
        bar = "#" * filled + "." * (self.width - filled)
        steps_done = step - (self.first_step or step) + 1
        elapsed = time.monotonic() - self.started
        eta = elapsed / steps_done * (self.total - step) if steps_done > 0 else 0
        val = f"  val {self.val:.4f}" if self.val is not None else ""
        return (f"[{bar}] {step}/{self.total}  loss {d['loss']:.4f}{val}  lr {d['lr']:.3g}  "
                f"{self.tokens_per_s() / 1e3:.1f}k tok/s  {_clock(elapsed)}<{_clock(eta)}")

    def update(self, d):
        """One step's dict (Trainer.fit's on_step keys)."""
        if self.first_step is None:
            self.first_step = d["step"]
        if d.get("step_ms", 0) > 0 and d.get("tokens_per_s", 0) > 0:
            seconds = d["step_ms"] / 1e3
            self.recent.append((d["tokens_per_s"] * seconds, seconds))
        if "divergence" in d:
            self._permanent(f"step {d['step']}: diverged: {d['divergence']}")
            return
        evaluated = "val_loss" in d
        if evaluated:
            self.val = d["val_loss"]
        self.line = self.render(d)
        if evaluated or d["step"] >= self.total:
            self._permanent(self.line)
        elif self.mode != "lines" and time.monotonic() - self.last_draw >= self.min_interval:
            self._draw(self.line)

    def _draw(self, line):
        self.last_draw = time.monotonic()
        if self.mode == "notebook":
            from IPython.display import display
            if self.handle is None:
                self.handle = display({"text/plain": line}, raw=True, display_id=True)
            else:
                self.handle.update({"text/plain": line}, raw=True)
        else:
            self.stream.write("\r" + line + "\x1b[K")
            self.stream.flush()

    def _permanent(self, line):
        if self.mode == "tty":
            self.stream.write("\r" + line + "\x1b[K\n")
            self.stream.flush()
        elif self.mode == "notebook":
            self._draw(line)
            self.handle = None  # the next step opens a new line under this one
        else:
            print(line, file=self.stream, flush=True)
