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

import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

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


def line_bounds(data: np.ndarray, has_cr: bool | None = None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(content start, content end, next line start) of the lines of ``data``, a run of whole
    lines (a last line without terminator counts; a CR at the end is a line end of its own).
    ``has_cr``: whether ``data`` holds a CR, where the caller knows (a search of its bytes object
    costs a fifth of a comparison of every byte); None: looked for here."""
    n = len(data)
    if not (has_cr if has_cr is not None else (data == 13).any()):  # LF only, the usual file: one pass
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


def _blocks(path: Path, start: int = 0, stop: int | None = None) -> Iterator[tuple[np.ndarray, int, bool]]:
    """(bytes, offset of its first byte in the file, whether they hold a CR) blocks of bytes
    [start, stop) (``start`` a line start, ``stop`` one or None: the file's end), each ending on a
    line end.  A block is a view of what was read, not a copy."""
    try:
        handle = reading.open_input(path)
    except OSError as exc:
        raise errors.InputError(f"{path}: cannot read ({exc.strerror})") from None
    with handle:
        if start:
            handle.seek(start)
        offset, carry, left = start, b"", None if stop is None else stop - start
        while True:
            chunk = handle.read(BLOCK if left is None else min(BLOCK, left))
            if left is not None:
                left -= len(chunk)
            final = not chunk
            data = carry + chunk
            if not data:
                return
            if final:
                yield np.frombuffer(data, np.uint8), offset, b"\r" in data
                return
            # cut after the last line end; a CR as the very last byte may be half of a CRLF
            cut = max(data.rfind(b"\n"), data.rfind(b"\r", 0, len(data) - 1)) + 1
            if cut == 0:
                carry = data
                continue
            yield np.frombuffer(data, np.uint8, count=cut), offset, data.find(b"\r", 0, cut) >= 0
            offset += cut
            carry = data[cut:]


def line_shards(paths, lines_per_shard: int, doc_boundary: str = "line", runner=None) -> list[LineShard]:
    """Shards of about ``lines_per_shard`` lines over the files, in file order; shard indices run over
    all files.  A shard never cuts a document: with ``doc_boundary`` ``blank_line`` it ends after the
    first blank line once it has its lines, with ``file`` it is the whole file.

    With ``line`` (every ``lines_per_shard`` lines a shard) the files are scanned in byte ranges on
    ``runner``'s workers (:func:`parallel_line_shards`); otherwise here, a block at a time."""
    if lines_per_shard < 1:
        raise ParamsError("lines_per_shard must be at least 1")
    if doc_boundary not in ("line", "blank_line", "file"):
        raise ParamsError(f"unknown doc_boundary {doc_boundary!r}")
    if doc_boundary == "line":
        return parallel_line_shards(paths, lines_per_shard, runner)
    return serial_line_shards(paths, lines_per_shard, doc_boundary)


def serial_line_shards(paths, lines_per_shard: int, doc_boundary: str) -> list[LineShard]:
    """:func:`line_shards` in this process, a block at a time."""
    shards: list[LineShard] = []
    for path in (p if location.is_url(p) else Path(p) for p in paths):
        first_index = len(shards)
        line, blank_count, run = 0, 0, 0
        pending = None  # (start_byte, first_line, blank_before, nonblank_before, nonblank_run) of the open shard
        lines_in_pending = 0
        for data, offset, has_cr in _blocks(path):
            starts, ends, nexts = line_bounds(data, has_cr)
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


#: bytes of a file that one task of the parallel scan reads (at least; a few tasks per worker)
RANGE_BYTES = 64 << 20


def _line_start_from(path, position: int, size: int) -> int:
    """The first line start at or after ``position`` (0 < position < size), ``size`` if none: just
    after an LF, or after a CR that no LF follows."""
    at = position - 1  # the byte before the first candidate
    while at < size:
        data = reading.read_range(path, at, min(size, at + (1 << 16)))
        hits = [i for i in (data.find(b"\n"), data.find(b"\r")) if i >= 0]
        if not hits:
            at += len(data)
            continue
        i = min(hits)
        if data[i] == 13 and at + i + 1 < size:  # a CR: the line ends after the LF that follows it, if one does
            after = data[i + 1 : i + 2] or reading.read_range(path, at + i + 1, at + i + 2)
            if after == b"\n":
                return at + i + 2
        return at + i + 1
    return size


def _range_bounds(path, size: int, workers: int) -> list[int]:
    """Line starts that cut the file into ranges for the scan's tasks (first 0, last ``size``)."""
    n = max(1, min(max(-(-size // RANGE_BYTES), 4 * workers), size // BLOCK))
    bounds = [0]
    for k in range(1, n):
        at = _line_start_from(path, k * size // n, size)
        if bounds[-1] < at < size:
            bounds.append(at)
    return [*bounds, size]


class _RangeScan:
    """Picklable: a byte range of whole lines of a file -> its line and blank counts and its
    trailing run of non-blank lines (``first``: None); or, given the file's counts before the range
    (``first``: lines, blank lines, run), the shard starts in it: every ``lines_per_shard``-th
    line, as (start byte, line, blank before, non-blank before, non-blank run)."""

    def __init__(self, lines_per_shard: int):
        self.lines_per_shard = lines_per_shard

    def __call__(self, task) -> tuple:
        path, start, stop, first = task
        line, blank_count, run = first or (0, 0, 0)
        starts_found = []
        for data, offset, has_cr in _blocks(path, start, stop):
            starts, ends, _ = line_bounds(data, has_cr)
            if offset == 0 and len(data) >= 3 and bytes(data[:3]) == reading.BOM and len(starts):
                starts = starts.copy()
                starts[0] = min(3, ends[0])
            blank = blank_flags(data, starts, ends)
            n = len(blank)
            if first is not None and n:
                # the lines here that start a shard, with the counts before each
                wanted = np.arange(-line % self.lines_per_shard, n, self.lines_per_shard)
                if len(wanted):
                    blank_before = np.r_[0, np.cumsum(blank)][wanted] + blank_count
                    last_blank = np.maximum.accumulate(np.where(blank, np.arange(n), -1))
                    previous = np.r_[-1, last_blank[:-1]][wanted]
                    runs = np.where(previous >= 0, wanted - 1 - previous, run + wanted)
                    line_starts = np.where(wanted > 0, offset + starts[wanted], offset)
                    if offset == 0:  # the BOM's line starts at the file's first byte
                        line_starts = np.where(wanted == 0, 0, line_starts)
                    starts_found += zip(
                        line_starts.tolist(),
                        (line + wanted).tolist(),
                        blank_before.tolist(),
                        (line + wanted - blank_before).tolist(),
                        runs.tolist(),
                    )
            blanks = np.flatnonzero(blank)
            run = n - 1 - int(blanks[-1]) if len(blanks) else run + n
            blank_count += len(blanks)
            line += n
        if first is None:
            return line, blank_count, run
        return starts_found


def parallel_line_shards(paths, lines_per_shard: int, runner=None, label: str = "ingest: line shards") -> list:
    """:func:`line_shards` with ``doc_boundary`` ``line``, the same shards, scanned on ``runner``'s
    workers (two passes timed under ``label``): each file is cut into byte ranges at line starts; the
    first pass counts each range's lines, blank lines and trailing run of non-blank lines; the driver
    sums them into each range's counts before it (a few numbers per range); the second pass finds
    the shard starts in each range.  The driver reads a few bytes at each cut, nothing else."""
    import time

    from pipeline.engine.executor import Executor, record_timing

    runner = runner or Executor()
    files = [p if location.is_url(p) else Path(p) for p in paths]
    ranges, sizes = [], []  # (file, start, stop); each file's size
    for k, path in enumerate(files):
        try:
            size = location.file_size(path)
        except OSError as exc:
            raise errors.InputError(f"{path}: cannot read ({exc.strerror})") from None
        sizes.append(size)
        bounds = _range_bounds(path, size, runner.workers) if size else [0, 0]
        ranges += [(k, str(path), a, b) for a, b in itertools.pairwise(bounds)]
    began = time.perf_counter()
    step = _RangeScan(lines_per_shard)
    counted = list(runner.imap(step, [(path, a, b, None) for _, path, a, b in ranges]))
    before, totals = [], {}  # each range's counts before it; each file's in all
    for (k, _, _, _), (lines, blank, run) in zip(ranges, counted):
        line0, blank0, run0 = totals.get(k, (0, 0, 0))
        before.append((line0, blank0, run0))
        totals[k] = (line0 + lines, blank0 + blank, run if blank else run0 + lines)
    found = list(runner.imap(step, [(path, a, b, first) for (_, path, a, b), first in zip(ranges, before)]))
    record_timing(label, time.perf_counter() - began, 2 * len(ranges), engine=runner.engine, workers=runner.workers)
    shards: list[LineShard] = []
    starts_of: dict[int, list] = {}
    for (k, _, _, _), starts in zip(ranges, found):
        starts_of.setdefault(k, []).extend(starts)
    for k, path in enumerate(files):
        lines, blank, _ = totals.get(k, (0, 0, 0))
        starts = starts_of.get(k, [])
        if not starts:  # an empty file: one empty shard, so it is still counted
            shards.append(LineShard(str(path), len(shards), 0, 0, 0, 0, 0, 0, 0, 0))
            continue
        stops = [s[0] for s in starts[1:]] + [sizes[k]]
        for (byte, *counts), stop in zip(starts, stops):
            shards.append(LineShard(str(path), len(shards), byte, stop, *counts, lines, blank))
    return shards


def read_shard_lines(shard: LineShard) -> tuple[pa.Array, np.ndarray]:
    """The shard's lines as an Arrow string array (BOM stripped, line ends dropped, UTF-8 checked with
    the byte offset in the file) and the blank flag of each, decided from the bytes as the scan did.

    The lines are cut from the bytes at the bounds the blank flags use: the shard is never decoded
    to a Python string and encoded again."""
    data = reading.read_range(shard.path, shard.start_byte, shard.stop_byte)
    array = np.frombuffer(data, np.uint8)
    starts, ends, nexts = line_bounds(array, b"\r" in data)
    if shard.start_byte == 0 and data.startswith(reading.BOM) and len(starts):
        starts = starts.copy()
        starts[0] = min(3, ends[0])
    blank = blank_flags(array, starts, ends)
    lengths = ends - starts
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    ended = ends < len(array)  # every line but a last one without a line end
    if len(starts) and starts[0] == 0 and (nexts[ended] - ends[ended] == 1).all() and (array[ends[ended]] == 10).all():
        values = data.replace(b"\n", b"")  # LF endings only: every byte but the line feeds
    else:  # CR, CRLF or a BOM: the bytes inside [start, end) of each line (the ranges are disjoint)
        inside = np.zeros(len(array) + 1, dtype=np.int8)
        inside[starts] += 1
        inside[ends] -= 1
        values = array[np.cumsum(inside[:-1], dtype=np.int8) > 0]
    if offsets[-1] >= 1 << 31:
        raise errors.InputError(f"{shard.path}: a shard of 2 GiB of text or more: use smaller shard_lines")
    lines = pa.StringArray.from_buffers(len(starts), pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(values))
    try:
        lines.validate(full=True)
    except pa.ArrowInvalid:  # the decoder says where, in the words every reader uses
        reading.decode_utf8(data, shard.path, first_line=shard.first_line + 1, base_offset=shard.start_byte)
        raise
    return lines, blank
