#!/usr/bin/env python3
"""Doxygen's INPUT_FILTER for tapegrad's headers: their plain // comments become documentation.

The headers keep ordinary // comments (what and why, with the maths); Doxygen only reads ///, //!
and /** */. This filter, run by Doxygen on each header it reads, rewrites a copy:
  * the file's opening comment block  -> //! @file and the block (the file's description);
  * a whole-line // comment            -> /// (documents the declaration that follows it);
  * code; // comment  after a member   -> code; ///< comment (documents that member);
and escapes the characters Doxygen would take for commands or HTML (\\ @ < > & # % $ ::) outside
`code spans`, so comments such as "Tensor<float>" or "x @ W" read as written. Line numbers are
kept, but for the one line @file adds at the top.
"""
import re
import sys

_SPECIAL = re.compile(r"([\\@<>&#%$]|::)")


def escape(text: str) -> str:
    """Escapes Doxygen's special characters outside backtick code spans."""
    parts = text.split("`")
    for i in range(0, len(parts), 2):  # even parts are outside code spans
        parts[i] = _SPECIAL.sub(r"\\\1", parts[i])
    if len(parts) % 2 == 0:  # an unpaired backtick: escape what follows it too
        parts[-1] = _SPECIAL.sub(r"\\\1", parts[-1])
    return "`".join(parts)


def trailing_comment(line: str):
    """(code, comment) for `code;  // comment`, when the // is outside strings; else None."""
    in_string = None
    i = 0
    while i < len(line):
        c = line[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == in_string:
                in_string = None
        elif c in "\"'":
            in_string = c
        elif line.startswith("//", i):
            return line[:i], line[i + 2:]
        i += 1
    return None


def convert(lines, path):
    out = []
    in_header = True  # still inside the file's opening comment block
    for line in lines:
        stripped = line.strip()
        if in_header:
            if stripped.startswith("//"):
                body = stripped[2:]
                # "@file PATH" takes the path as its argument; the block's text follows as the description.
                out.append((f"//! @file {path}\n//!" if not out else "//!") + escape(body))
                continue
            in_header = False
        if stripped.startswith("///") or stripped.startswith("//!"):
            out.append(line)
        elif stripped.startswith("//"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(indent + "///" + escape(stripped[2:]))
        else:
            split = trailing_comment(line)
            if split and split[0].rstrip().endswith((";", ",")):
                out.append(split[0] + "///<" + escape(split[1]))
            else:
                out.append(line)
    return out


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().split("\n")
    sys.stdout.write("\n".join(convert(lines, sys.argv[1])))


if __name__ == "__main__":
    main()
