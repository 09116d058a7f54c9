"""Lint for the Python client without third-party tools (pyflakes is not installed here): every
file must compile, and no module may import a name it never uses. Generated stubs are skipped.

Usage: /usr/bin/python3 clients/python/scripts/lint.py [paths...]
"""

import ast
import os
import sys


def python_files(paths):
    for root in paths:
        if os.path.isfile(root):
            yield root
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = [d for d in dirs if d not in ("__pycache__", "_proto")]
            yield from (os.path.join(folder, f) for f in sorted(files) if f.endswith(".py"))


def problems(path):
    with open(path, encoding="utf-8") as f:
        source = f.read()
    try:
        tree = ast.parse(source, path)
        compile(tree, path, "exec")
    except SyntaxError as err:
        return [f"{path}:{err.lineno}: {err.msg}"]
    if os.path.basename(path) == "__init__.py":
        return []  # re-exports
    imported = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "__future__":
            continue  # compiler directives, not names
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                name = (alias.asname or alias.name).split(".")[0]
                imported.setdefault(name, node.lineno)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    return [f"{path}:{line}: '{name}' imported but unused" for name, line in imported.items() if name not in used]


def main(paths):
    found = [p for path in python_files(paths) for p in problems(path)]
    for p in found:
        print(p)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["clients/python", "examples/python"]))
