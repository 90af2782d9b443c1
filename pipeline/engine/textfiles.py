"""Line-oriented text files cut into shards by a streaming scan of their bytes.

A shard is a byte range of whole lines, found without holding more than one block of the file.
The scan also carries what a shard needs to number its documents and segments exactly as a
reading of the whole file would: how many blank and non-blank lines come before it, and how
many non-blank lines since the last blank one.

Lines end at LF, CRLF or a lone CR.  A line is *blank* when it holds no character but
whitespace, control characters and the invisible ones normalization deletes (zero-width
spaces and joiners, BOM, soft hyphen, direction marks): the same rule, from the same bytes, in
the scan and in the step that reads the shard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pipeline import errors
from pipeline.engine import location, reading
from pipeline.errors import ParamsError

_INVISIBLE = "\u200b\u2060\ufeff\u00ad\u200e\u200f\u200c\u200d"
_BLANK_TEXT = re.compile(rf"[\s\x00-\x1f\x7f{_INVISIBLE}]*")

# byte classes: 0 says nothing (whitespace, controls, continuation bytes), 2 starts a visible
# character, 1 leads a multi-byte character that may be an invisible one (decided in Python)
_CLASS = np.full(256, 2, dtype=np.int8)
_CLASS[:0x21] = 0
_CLASS[0x7F] = 0
_CLASS[0x80:0xC0] = 0
for _lead in (0xC2, 0xE1, 0xE2, 0xE3, 0xEF):  # U+0085/00A0/00AD, U+1680, U+2000-206F, U+3000, U+FEFF
    _CLASS[_lead] = 1

# the scan's block: its temporaries (a dozen arrays of the block's size) are the driver's peak, and
# the workers fork from the driver (8 MB blocks: 204 MB at 100 M words; 1 MB: 138 MB, as fast)
BLOCK = 1 << 20


def line_bounds(data: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(content start, content end, next line start) of the lines of ``data``, a run of whole
    lines (a last line without terminator counts; a CR at the end is a line end of its own)."""
    n = len(data)
    if not (data == 13).any():  # LF only, the usual file: one pass finds every line end
        ends = np.flatnonzero(data == 10).astype(np.int64, copy=False)
        nexts = ends + 1
    else:
        lf = data == 10
        cr = data == 13
        lone_cr = cr.copy()
        lone_cr[:-1] &= ~lf[1:]
        terminators = np.flatnonzero(lf | lone_cr)
        ends = terminators.astype(np.int64)
        crlf = lf[terminators] & (terminators > 0)
        crlf[crlf] &= cr[terminators[crlf] - 1]
        ends[crlf] -= 1
        nexts = terminators.astype(np.int64) + 1
    starts = np.r_[0, nexts[:-1]].astype(np.int64) if len(nexts) else np.zeros(0, np.int64)
    tail_start = int(nexts[-1]) if len(nexts) else 0
    if tail_start < n:
        starts = np.r_[starts, tail_start]
        ends = np.r_[ends, n]
        nexts = np.r_[nexts, n]
    return starts, ends, nexts


def blank_flags(data: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which of the lines [starts, ends) of ``data`` are blank (see the module doc)."""
    blank = np.ones(len(starts), dtype=bool)
    nonempty = np.flatnonzero(ends > starts)
    if not len(nonempty):
        return blank
    # a line whose first byte starts a visible character is not blank (most lines: their other
    # bytes are not looked at); the others by the highest class of their bytes: 2, a visible
    # character; 1, only bytes to decode and look at; 0, blank
    first = _CLASS[data[starts[nonempty]]]
    blank[nonempty[first == 2]] = False
    rest = nonempty[first != 2]
    if not len(rest):
        return blank
    lengths = ends[rest] - starts[rest]
    offsets = np.r_[0, np.cumsum(lengths)]
    at = np.repeat(starts[rest] - offsets[:-1], lengths) + np.arange(offsets[-1])
    top = np.maximum.reduceat(_CLASS[data[at]], offsets[:-1])
    blank[rest] = top == 0
    for i in rest[top == 1].tolist():
        text = bytes(data[starts[i] : ends[i]]).decode("utf-8", errors="replace")
        blank[i] = _BLANK_TEXT.fullmatch(text) is not None
    return blank


@dataclass(frozen=True)
class LineShard:
    """Lines of one text file: bytes [start_byte, stop_byte), the file's lines [first_line, ...).

    ``blank_before`` / ``nonblank_before``: blank and non-blank lines of the file before the shard;
    ``nonblank_run``: non-blank lines since the last blank line before it.  ``file_lines`` and
    ``file_blank`` describe the whole file (the file's first shard reports them)."""

    path: str
    index: int
    start_byte: int
    stop_byte: int
    first_line: int
    blank_before: int
    nonblank_before: int
    nonblank_run: int
    file_lines: int = 0
    file_blank: int = 0


def _blocks(path: Path) -> Iterator[tuple[np.ndarray, int]]:
    """(bytes, offset of its first byte in the file) blocks, each ending on a line end."""
    try:
        handle = reading.open_input(path)
    except OSError as exc:
        raise errors.InputError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:
        offset, carry = 0, b""
        while True:
            chunk = handle.read(BLOCK)
            final = not chunk
            data = carry + chunk
            if not data:
                return
            if final:
                yield np.frombuffer(data, np.uint8), offset
                return
            # cut after the last line end; a CR as the very last byte may be half of a CRLF
            cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
            if cut == 0:
                carry = data
                continue
            yield np.frombuffer(data[:cut], np.uint8), offset
            offset += cut
            carry = data[cut:]


def line_shards(paths, lines_per_shard: int, doc_boundary: str = "line") -> list[LineShard]:
    """Shards of about ``lines_per_shard`` lines over the files, in file order; shard indices run over
    all files.  A shard never cuts a document: with ``doc_boundary`` ``blank_line`` it ends after the
    first blank line once it has its lines, with ``file`` it is the whole file."""
    if lines_per_shard < 1:
        raise ParamsError("lines_per_shard must be at least 1")
    if doc_boundary not in ("line", "blank_line", "file"):
        raise ParamsError(f"unknown doc_boundary {doc_boundary!r}")
    shards: list[LineShard] = []
    for path in (p if location.is_url(p) else Path(p) for p in paths):
        first_index = len(shards)
        line, blank_count, run = 0, 0, 0
        pending = None  # (start_byte, first_line, blank_before, nonblank_before, nonblank_run) of the open shard
        lines_in_pending = 0
        for data, offset in _blocks(path):
            starts, ends, nexts = line_bounds(data)
            if offset == 0 and len(data) >= 3 and bytes(data[:3]) == reading.BOM and len(starts):
                starts = starts.copy()
                starts[0] = min(3, ends[0])
            blank = blank_flags(data, starts, ends)
            k = 0
            while k < len(blank):
                if pending is None:
                    pending = (offset + int(starts[k]) if k else offset, line, blank_count, line - blank_count, run)
                    lines_in_pending = 0
                if lines_in_pending < lines_per_shard:
                    take = min(lines_per_shard - lines_in_pending, len(blank) - k)
                elif doc_boundary == "blank_line":  # full: go on to the next blank line (a document's end)
                    found = np.flatnonzero(blank[k:])
                    take = int(found[0]) + 1 if len(found) else len(blank) - k
                else:  # a whole file is one document
                    take = len(blank) - k
                piece = blank[k : k + take]
                for is_blank in piece.tolist() if take < 64 else ():
                    run = 0 if is_blank else run + 1
                if take >= 64:
                    blanks = np.flatnonzero(piece)
                    run = take - 1 - int(blanks[-1]) if len(blanks) else run + take
                blank_count += int(piece.sum())
                line += take
                lines_in_pending += take
                k += take
                full = lines_in_pending >= lines_per_shard and (
                    doc_boundary == "line" or (doc_boundary == "blank_line" and bool(blank[k - 1]))
                )
                if full:
                    shards.append(
                        LineShard(str(path), len(shards), pending[0], offset + int(nexts[k - 1]), *pending[1:])
                    )
                    pending = None
        if pending is not None:
            shards.append(LineShard(str(path), len(shards), pending[0], location.file_size(path), *pending[1:]))
        for i in range(first_index, len(shards)):
            s = shards[i]
            shards[i] = LineShard(
                s.path,
                s.index,
                s.start_byte if i > first_index else 0,
                s.stop_byte,
                s.first_line,
                s.blank_before,
                s.nonblank_before,
                s.nonblank_run,
                line,
                blank_count,
            )
        if len(shards) == first_index:  # an empty file: one empty shard, so it is still counted
            shards.append(LineShard(str(path), len(shards), 0, 0, 0, 0, 0, 0, 0, 0))
    return shards


def read_shard_lines(shard: LineShard) -> tuple[str, np.ndarray]:
    """The shard's text (BOM stripped, UTF-8 checked with the byte offset in the file) and the
    blank flag of each of its lines, decided from the bytes as the scan did."""
    data = reading.read_range(shard.path, shard.start_byte, shard.stop_byte)
    array = np.frombuffer(data, np.uint8)
    starts, ends, _ = line_bounds(array)
    if shard.start_byte == 0 and data.startswith(reading.BOM) and len(starts):
        starts = starts.copy()
        starts[0] = min(3, ends[0])
    blank = blank_flags(array, starts, ends)
    text = reading.decode_utf8(data, shard.path, first_line=shard.first_line + 1, base_offset=shard.start_byte)
    return text, blank
