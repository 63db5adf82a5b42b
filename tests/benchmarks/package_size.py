"""The size of ``toolkit/memorylab`` at git revisions: all lines of its Python files, and its
lines of code (neither blank, nor comment, nor docstring), ``memory/_redact.py`` apart (a rule
table). How issue 23's "the package does not grow" was measured: the house commits against
their parents, docstrings aside.

    python tests/benchmarks/package_size.py REV [REV ...]
"""

from __future__ import annotations

import ast
import io
import subprocess
import sys
import tokenize


def code_lines(source: str) -> int:
    """Lines holding a token that is neither a comment nor a docstring (nor layout)."""
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        for statement in body if isinstance(body, list) else ():
            if (isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant)
                    and isinstance(statement.value.value, str)):  # fmt: skip
                docstrings.update(range(statement.lineno, (statement.end_lineno or 0) + 1))
    layout = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
              tokenize.ENDMARKER}  # fmt: skip
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in layout:
            code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstrings)


def size(rev: str) -> tuple[int, int]:
    names = subprocess.run(["git", "ls-tree", "-r", "--name-only", rev, "toolkit/memorylab"],
                           capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    lines = code = 0
    for name in names:
        if name.endswith(".py") and not name.endswith(("memory/redact.py", "memory/_redact.py")):
            source = subprocess.run(["git", "show", f"{rev}:{name}"], capture_output=True,
                                    text=True, check=True).stdout  # fmt: skip
            lines += len(source.splitlines())
            code += code_lines(source)
    return lines, code


def main(revs: list[str]) -> int:
    print("| revision | lines | lines of code |")
    print("|---|---:|---:|")
    for rev in revs:
        lines, code = size(rev)
        print(f"| {rev} | {lines:,} | {code:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:] or ["HEAD"]))
