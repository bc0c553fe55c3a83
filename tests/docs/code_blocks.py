#!/usr/bin/env python3
"""CTest "docs: every code block is compiled or run": the docs cannot rot.

Every fenced block in docs/*.md (and every C++ block of README.md) must follow a marker line:

  <!-- compiled: NAME -->   C++; tests/package/run.sh builds it against an installed tapegrad.
  <!-- run -->             shell or Python; run here, as written, one page at a time.
  <!-- output -->          what a program printed (a table, a sample): not code.
  <!-- quoted: PATH -->     lines of a file the suite builds (a CMake snippet): each line of the
                            block, comments aside, must be in PATH.
A block and its marker may be indented (inside a list item).

Running a page's blocks: each page gets a scratch folder laid out like a checkout, where
`build/examples/PROG` runs the built program with the block's flags as written, followed (for the
training programs, unless the command resumes a run) by `--config quick.json`: a tiny model and a
few steps, which set only what the command leaves unset — flags given on the command line win
over a config file. `../shared/data/tinyshakespeare.txt` and `some.txt` are small texts of the
project's own; `mpirun` may run as root and oversubscribe; `srun` runs its command once, as a
one-task Slurm job would. A block fails the test when it exits non-zero; its output is printed.

Usage: code_blocks.py BIN_DIR SOURCE_DIR [--mpi yes|no]
"""
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

MARKER = re.compile(r"^ *<!-- (compiled: \S+|quoted: \S+|run|output) -->$")

# What the training programs get after the documented flags: small enough that a block runs in
# seconds, large enough that every program downstream (sampling, evaluation) has a real model.
QUICK = {
    "train_lm": {"layers": 1, "heads": 2, "dim": 16, "ctx": 16, "batch": 4, "steps": 3, "eval-iters": 1,
                 "warmup": 1},
    "compare_norms": {"heads": 2, "dim": 16, "ctx": 16, "batch": 4, "steps": 3, "eval-iters": 1, "evals": 1,
                      "layers": 1, "warmup": 1},
}


def blocks(path: Path):
    """(line number, language, marker or None, text) of every fenced block in a markdown file."""
    lines = path.read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("```"):
            start, lang = i, lines[i].strip()[3:].strip()
            indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            body = []
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                body.append(lines[i][indent:])
                i += 1
            match = MARKER.match(lines[start - 1]) if start > 0 else None
            yield start + 1, lang, match.group(1) if match else None, "\n".join(body) + "\n"
        i += 1


def without_comment(line: str) -> str:
    return re.split(r"\s(#|//)\s", " " + line.strip() + " ", maxsplit=1)[0].strip()


def quoted_problems(root: Path, where: str, marker: str, text: str):
    source = root / marker.split(": ", 1)[1]
    if not source.is_file():
        return [f"{where}: '{marker}' names no file"]
    have = {without_comment(l) for l in source.read_text(encoding="utf-8").splitlines()}
    return [f"{where}: the line '{without_comment(l)}' is not in {source.relative_to(root)}"
            for l in text.splitlines() if without_comment(l) and without_comment(l) not in have]


def check_markers(root: Path):
    """Every block of docs/ marked, C++ compiled, shell and Python run; README's C++ compiled."""
    problems = []
    pages = sorted((root / "docs").glob("*.md")) + [root / "README.md"]
    for page in pages:
        for line, lang, marker, text in blocks(page):
            where = f"{page.relative_to(root)}:{line}"
            if page.name == "README.md" and lang != "cpp":
                continue  # its two commands are the suite itself and the lab; its table an output
            if marker is None:
                problems.append(f"{where}: a ```{lang} block without a marker (compiled: NAME, run or output) before it")
            elif marker.startswith("quoted"):
                problems += quoted_problems(root, where, marker, text)
            elif lang == "cpp" and not marker.startswith("compiled"):
                problems.append(f"{where}: a C++ block must be '<!-- compiled: NAME -->', not '{marker}'")
            elif lang in ("sh", "bash", "python") and marker != "run":
                problems.append(f"{where}: a ```{lang} block must be '<!-- run -->', not '{marker}'")
            elif lang not in ("cpp", "sh", "bash", "python", ""):
                problems.append(f"{where}: a ```{lang} block: this test runs sh, bash and python and compiles cpp; "
                                "other blocks are quoted from a file the suite uses")
    return problems


def executable(path: Path, text: str):
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def lay_out(scratch: Path, bin_dir: Path, root: Path):
    """A checkout-like folder: build/examples/ with the programs, the texts, the shims."""
    work = scratch / "work"
    examples = work / "build" / "examples"
    examples.mkdir(parents=True)
    if (bin_dir.parent / "python").is_dir():  # the Python front-end, as build/python in a checkout
        os.symlink(bin_dir.parent / "python", work / "build" / "python")
    for program in sorted(bin_dir.iterdir()):
        if not (program.is_file() and os.access(program, os.X_OK)):
            continue
        quick = QUICK.get(program.name)
        if quick is None:
            os.symlink(program, examples / program.name)
            continue
        config = scratch / f"quick_{program.name}.json"
        config.write_text(json.dumps(quick))
        executable(examples / program.name, f"""#!/usr/bin/env bash
for a in "$@"; do [[ "$a" == --resume ]] && exec {program} "$@"; done
exec {program} "$@" --config {config}
""")
    # The project's own text stands in for the data files the docs name; "ROMEO:" is a prompt there.
    text = (root / "tests" / "fixtures" / "text.txt").read_text(encoding="utf-8") + "\nROMEO:\nA rose by any name.\n"
    (scratch / "shared" / "data").mkdir(parents=True)
    (scratch / "shared" / "data" / "tinyshakespeare.txt").write_text(text, encoding="utf-8")
    (work / "some.txt").write_text(text, encoding="utf-8")
    (work / "hosts").write_text("localhost slots=8\n")
    shims = scratch / "shims"
    shims.mkdir()
    executable(shims / "srun", '#!/usr/bin/env bash\n# A one-task Slurm job: the command, once.\nexec "$@"\n')
    real_mpirun = shutil.which("mpirun")
    if real_mpirun:  # OpenMPI's own allocations read as leaks to LeakSanitizer: off for its ranks (tests/mpi/mpi.sh)
        executable(shims / "mpirun", '#!/usr/bin/env bash\n'
                   'export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"\n'
                   f'exec {real_mpirun} "$@"\n')
    return work, shims


def run_page(page: Path, bin_dir: Path, root: Path, mpi: bool):
    runnable = [(line, lang, text) for line, lang, marker, text in blocks(page) if marker == "run"]
    if not runnable:
        return 0, [], []
    failures, skipped = [], []
    with tempfile.TemporaryDirectory(prefix="tapegrad-docs-") as tmp:
        scratch = Path(tmp)
        work, shims = lay_out(scratch, bin_dir, root)
        python_package = bin_dir.parent / "python"  # the front-end's build folder (import tapegrad)
        env = dict(os.environ, PATH=f"{shims}:{os.environ['PATH']}", OMP_NUM_THREADS="1", PYTHONPATH=str(python_package),
                   OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1")
        for line, lang, text in runnable:
            where = f"{page.relative_to(root)}:{line}"
            if "mpirun" in text and not mpi:
                skipped.append(f"{where} (tapegrad was built without MPI)")
                continue
            # Any form of the import, in Python or a shell line ("import numpy as np, tapegrad as tg",
            # "from tapegrad import nn", python3 -c "import tapegrad; ...").
            if re.search(r"\b(?:import|from)\s[^\n;]*\btapegrad\b", text) and not (python_package / "tapegrad").is_dir():
                skipped.append(f"{where} (tapegrad was built without its Python front-end)")
                continue
            command = ["/usr/bin/python3", "-c", text] if lang == "python" else ["bash", "-euo", "pipefail", "-c", text]
            proc = subprocess.run(command, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace", timeout=600)
            if proc.returncode != 0:
                failures.append(f"{where}: exit {proc.returncode}\n{text}--- output (last 40 lines):\n"
                                + "\n".join(proc.stdout.splitlines()[-40:]))
            else:
                print(f"ran {where} ({len(text.strip().splitlines())} lines)")
    return len(runnable) - len(skipped), failures, skipped


def main():
    bin_dir, root = Path(sys.argv[1]).resolve(), Path(sys.argv[2]).resolve()
    mpi = "--mpi" in sys.argv and sys.argv[sys.argv.index("--mpi") + 1] == "yes"
    problems = check_markers(root)
    ran = 0
    for page in sorted((root / "docs").glob("*.md")):
        n, failures, skipped = run_page(page, bin_dir, root, mpi)
        ran += n
        problems += failures
        for s in skipped:
            print("not run:", s)
    for p in problems:
        print("FAIL:", p)
    if problems:
        sys.exit(1)
    print(f"OK: every code block of docs/ is marked; {ran} blocks ran")


if __name__ == "__main__":
    main()
