"""The input-split rule of line-oriented datasets (same as libs/client/src/read-lines.ts).

A task reads the lines that *begin* in its byte range [start, end): a range starting mid-line
skips to the next line start, and the last line is read to its end even past `end`. Ranges that
tile a file thus read every line exactly once, whatever the task size.
"""

from __future__ import annotations

from typing import Iterator


def read_lines(path: str, start: int, end: int) -> Iterator[str]:
    """Yields the lines (str, without `\\n` or `\\r\\n`) that begin in [start, end) of the file."""
    with open(path, "rb") as f:
        # A line begins at `start` only if it is the file's first byte or follows a newline.
        skipping = False
        if start > 0:
            f.seek(start - 1)
            before = f.read(1)
            skipping = len(before) == 1 and before != b"\n"
        if not skipping and start >= end:
            return
        f.seek(start)
        position = start
        if skipping:
            rest = f.readline()
            position += len(rest)
            if not rest.endswith(b"\n") or position >= end:
                return
        while True:
            line = f.readline()
            if not line:
                return
            position += len(line)
            if line.endswith(b"\n"):
                yield _decode(line[:-1])
                if position >= end:
                    return  # the next line begins outside the range
            else:
                yield _decode(line)
                return


def _decode(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text[:-1] if text.endswith("\r") else text
