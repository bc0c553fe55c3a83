#!/usr/bin/env python3
"""Every source of the library's layers and programs (lib/, nn/, lm/, lab/, cli/, examples/) must compile with
clang as well as with GCC: users build tapegrad with either, and scripts/fuzz.sh builds it with clang
(libFuzzer). A GCC-only builtin in the attention kernels and a lambda capturing a structured binding
(which clang 14 rejects) once broke both. Each file's own command from this build's
compile_commands.json is run with clang++ -fsyntax-only: the same flags, defines and include paths,
no code generated (the GCC build already does that). About 1.7 s of CPU per file, mostly parsing
Eigen; a precompiled header of the third-party headers saved too little to keep (1.0-1.6x per file).

    clang_syntax.py BUILD_DIR SOURCE_DIR     # prints "OK: N sources compile with clang"
"""
import concurrent.futures
import json
import os
import shlex
import shutil
import subprocess
import sys

LAYERS = ("lib", "nn", "lm", "lab", "cli", "examples")


def clang_command(command, clang):
    """The GCC command line for one file, as a clang syntax check."""
    args = shlex.split(command)
    out = [clang, "-fsyntax-only", "-Wno-unknown-warning-option"]
    skip = False
    for a in args[1:]:
        if skip:
            skip = False
        elif a == "-o":
            skip = True
        elif a != "-c":
            out.append(a)
    return out


def main():
    build, source = (os.path.realpath(p) for p in sys.argv[1:3])
    clang = shutil.which("clang++")
    if clang is None:
        print("clang++ not found: scripts/install-deps.sh --test installs it (Debian package clang)")
        return 1
    entries = json.load(open(os.path.join(build, "compile_commands.json")))
    roots = tuple(os.path.join(source, layer) + os.sep for layer in LAYERS)
    jobs = sorted({(e["file"], e["directory"], e["command"]) for e in entries
                   if os.path.realpath(e["file"]).startswith(roots) and "command" in e})
    if len(jobs) < 50:  # the layers hold ~90 sources: far fewer means the selection broke
        print(f"only {len(jobs)} sources under {', '.join(LAYERS)} in {build}/compile_commands.json")
        return 1

    def check(job):
        path, directory, command = job
        r = subprocess.run(clang_command(command, clang), cwd=directory, capture_output=True, text=True)
        return path, r.returncode, r.stderr

    failed = 0
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        for path, rc, err in pool.map(check, jobs):
            if rc != 0:
                failed += 1
                print(f"FAIL {os.path.relpath(path, source)} does not compile with clang:\n{err.strip()[:2000]}\n")
    if failed:
        print(f"{failed} of {len(jobs)} sources fail with clang")
        return 1
    print(f"OK: {len(jobs)} sources compile with clang")
    return 0


if __name__ == "__main__":
    sys.exit(main())
