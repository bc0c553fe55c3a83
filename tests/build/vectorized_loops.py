#!/usr/bin/env python3
"""Every loop marked `// vectorized` in lib/ and nn/ must be vectorised by the compiler.

Why a test: AdamW's update loop once captured its pointers by reference inside a parallel_for
body; a store through one of them might (for the compiler) have changed the others, so the loop
stayed scalar and the optimiser ran 4x slower than memory allows — silently, as every result was
right. This recompiles each file holding a marker with its exact build command (from
compile_commands.json) plus -fopt-info-vec-optimized and requires a "loop vectorized" note on
every marked line.

    python3 tests/build/vectorized_loops.py BUILD_DIR SOURCE_DIR
"""
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys

MARK = "// vectorized"


def marked_lines(path):
    with open(path, encoding="utf-8") as f:
        return {i + 1: line.strip() for i, line in enumerate(f) if line.rstrip().endswith(MARK)}


def vectorized_lines(entry, path):
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    out = args.index("-o")
    args = args[:out] + ["-o", os.devnull] + args[out + 2:] + ["-fopt-info-vec-optimized"]
    r = subprocess.run(args, cwd=entry["directory"], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"compiling {path} failed:\n{r.stderr[-2000:]}")
    name = re.escape(os.path.basename(path))
    return {int(m.group(1)) for m in re.finditer(rf"{name}:(\d+):\d+: optimized: loop vectorized", r.stderr)}


def main():
    build, source = sys.argv[1], os.path.realpath(sys.argv[2])
    with open(os.path.join(build, "compile_commands.json")) as f:
        commands = {os.path.realpath(os.path.join(e["directory"], e["file"])): e for e in json.load(f)}
    files = {}
    for top in ("lib", "nn"):
        for root, _, names in os.walk(os.path.join(source, top)):
            for n in names:
                path = os.path.join(root, n)
                if n.endswith(".cpp") and (lines := marked_lines(path)):
                    files[path] = lines
    if not files:
        sys.exit("no loop is marked '// vectorized' under lib/ or nn/")
    missing = [p for p in files if p not in commands]
    if missing:
        sys.exit(f"not in compile_commands.json: {missing}")
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        done = dict(zip(files, pool.map(lambda p: vectorized_lines(commands[p], p), files)))
    failures = 0
    for path, lines in sorted(files.items()):
        rel = os.path.relpath(path, source)
        for n, text in sorted(lines.items()):
            ok = n in done[path]
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {rel}:{n}  {text}")
    total = sum(len(v) for v in files.values())
    if failures:
        sys.exit(f"{failures} of {total} marked loops are not vectorised (see FAIL lines; the compiler's "
                 f"reason: rebuild the file with -fopt-info-vec-missed)")
    print(f"OK: all {total} marked loops vectorised")


if __name__ == "__main__":
    main()
