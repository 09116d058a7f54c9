"""read_lines: across ranges that tile a file, every line exactly once (the input-split rule)."""

import random

from pserver_client import read_lines


def expected_lines(content):
    pieces = content.split(b"\n")
    if pieces[-1] == b"":
        pieces.pop()
    out = []
    for p in pieces:
        text = p.decode("utf-8", errors="replace")
        out.append(text[:-1] if text.endswith("\r") else text)
    return out


def random_content(rng):
    lines = []
    for _ in range(rng.randint(0, 40)):
        length = rng.choice([0, 1, 2, 5, 30, 200])
        text = "".join(rng.choice("ab c,0é🙂") for _ in range(length))
        lines.append(text + rng.choice(["\n", "\n", "\r\n"]))
    content = "".join(lines)
    if rng.random() < 0.3:
        content += "last line without newline"
    return content.encode("utf-8")


def tiles(size, rng):
    """Random ranges [start, end) that tile [0, size)."""
    cuts = sorted({0, size, *(rng.randint(0, size) for _ in range(rng.randint(0, 8)))})
    return list(zip(cuts, cuts[1:])) or [(0, 0)]


def test_every_line_exactly_once_over_random_files_and_tilings(tmp_path):
    rng = random.Random(1234)
    for i in range(300):
        content = random_content(rng)
        path = tmp_path / f"f{i}.txt"
        path.write_bytes(content)
        ranges = tiles(len(content), rng)
        got = [line for start, end in ranges for line in read_lines(str(path), start, end)]
        assert got == expected_lines(content), (content, ranges)


def test_range_edges(tmp_path):
    path = tmp_path / "f.txt"
    path.write_bytes(b"ab\ncd\nef")
    assert list(read_lines(str(path), 0, 1)) == ["ab"]  # read to its end past `end`
    assert list(read_lines(str(path), 1, 3)) == []  # begins mid-line; "cd" begins at 3
    assert list(read_lines(str(path), 1, 4)) == ["cd"]
    assert list(read_lines(str(path), 3, 3)) == []  # empty range
    assert list(read_lines(str(path), 6, 8)) == ["ef"]  # last line without a newline
    assert list(read_lines(str(path), 8, 100)) == []
