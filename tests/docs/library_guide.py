"""CTest "docs: the library guide's projects ...": docs/library.md's table of five projects is true.

For each row: the tapegrad program (a block marked `<!-- compiled: NAME -->` in README.md or
docs/, which the package test builds and runs) and its PyTorch twin have the line counts the
table states (lines neither blank nor only a comment), the ratio is theirs, a ratio above 1.5 is
marked "over" and only then; and every twin runs to success with PyTorch.

    library_guide.py ROOT   (run with the Python that has torch)
"""
import re
import subprocess
import sys
from pathlib import Path

AIM = 1.5
root = Path(sys.argv[1])
pages = [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def block(name):
    """The fenced block after `<!-- compiled: name -->` in any page, as lines."""
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() == f"<!-- compiled: {name} -->":
                assert lines[i + 1].strip() == "```cpp", f"{page.name}: no ```cpp after the marker {name}"
                end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
                return lines[i + 2 : end]
    sys.exit(f"FAIL: no block marked '<!-- compiled: {name} -->' in README.md or docs/")


def code_lines(lines, comment):
    return sum(1 for l in lines if l.strip() and not l.strip().startswith(comment))


row = re.compile(r"^\| (?P<what>[^|]+) \| `(?P<cpp>[^`]+)`[^|]* \| `(?P<py>examples/pytorch/[^`]+\.py)` \| "
                 r"(?P<n>\d+) \| (?P<m>\d+) \| (?P<ratio>\d+\.\d\d)(?P<over> over)? \|$")
rows = [m for l in (root / "docs/library.md").read_text(encoding="utf-8").splitlines() if (m := row.match(l))]
if len(rows) != 5:
    sys.exit(f"FAIL: docs/library.md: {len(rows)} rows in the projects table, expected 5")
bad = []
for r in rows:
    cpp = code_lines(block(r["cpp"]), "//")
    py = code_lines((root / r["py"]).read_text(encoding="utf-8").splitlines(), "#")
    ratio = cpp / py
    print(f"{r['what']}: {cpp} lines against {py}, {ratio:.2f}")
    if (cpp, py) != (int(r["n"]), int(r["m"])) or f"{ratio:.2f}" != r["ratio"]:
        bad.append(f"{r['what']}: the table says {r['n']} / {r['m']} = {r['ratio']}, counted {cpp} / {py} = {ratio:.2f}")
    if (ratio > AIM) != bool(r["over"]):
        bad.append(f"{r['what']}: ratio {ratio:.2f} is {'over' if ratio > AIM else 'within'} the {AIM} aim, "
                   f"the table {'marks' if r['over'] else 'does not mark'} it over")
    run = subprocess.run([sys.executable, str(root / r["py"])], capture_output=True, text=True, timeout=600)
    if run.returncode != 0:
        bad.append(f"{r['py']} failed (exit {run.returncode}): {(run.stderr or run.stdout).strip().splitlines()[-1:]}")
for b in bad:
    print("FAIL:", b)
if bad:
    sys.exit(1)
print("OK: the library guide's table is true and every PyTorch twin runs")
