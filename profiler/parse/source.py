"""Bytes of a trace, from a path, bytes or a binary file-like object (a Streamlit upload, say):
decompressed when gzip (found by its magic bytes, whatever the file is called), hashed and
size-capped as they go by, read ahead on a helper thread."""
from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import os
import stat
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from queue import Empty, Queue
from typing import Any, BinaryIO

from profiler import errors

CHUNK_BYTES = 4 << 20
DEFAULT_MAX_BYTES = 4 << 30  # decompressed size cap; also stops gzip bombs

Source = str | os.PathLike | bytes | bytearray | memoryview | BinaryIO
Progress = Callable[[float], None]


class Chunks:
    """Decompressed chunks of a source, hashed and size-capped as they go by."""

    def __init__(self, src: Source, name: str, max_bytes: int, progress: Progress | None, hashed: bool = True):
        self.name, self.max_bytes, self.progress = name, max_bytes, progress
        self.sha = hashlib.sha256() if hashed else None  # not for a chunk of a file (its hash is the file's)
        self.size = 0
        self.src = src
        self.position = 0  # bytes of the source (compressed, if gzip) read up to the last chunk yielded
        self.consumed = 0  # decompressed bytes yielded
        self._raw, self._total, self._owned = open_raw(src, name)

    @property
    def total(self) -> int:
        """The source's size in bytes (compressed, if gzip), or 0 when unknown."""
        return self._total

    @property
    def reopenable(self) -> bool:
        """Whether the source can be read again from its start (a path or bytes)."""
        return isinstance(self.src, (str, os.PathLike, bytes, bytearray, memoryview))

    def __iter__(self) -> Iterator[bytes]:
        """Chunks are read, decompressed and hashed on a helper thread (zlib and hashlib release
        the GIL), so that work overlaps with decoding on the caller's thread."""
        queue: Queue = Queue(maxsize=3)
        stop = threading.Event()
        worker = threading.Thread(target=self._produce, args=(queue, stop), daemon=True)
        worker.start()
        try:
            while (item := queue.get()) is not None:
                if isinstance(item, BaseException):
                    raise item
                chunk, position = item
                self.position, self.consumed = position, self.consumed + len(chunk)
                self._report(position)
                yield chunk
        finally:
            stop.set()
            while worker.is_alive():  # unblock a producer waiting on a full queue
                with contextlib.suppress(Empty):
                    queue.get_nowait()
                worker.join(timeout=0.05)
            if self._owned:
                self._raw.close()

    def _produce(self, queue: Queue, stop: threading.Event) -> None:
        try:
            stream = self._decompressing()
            while not stop.is_set() and (chunk := self._read(stream)):
                self.size += len(chunk)
                if self.size > self.max_bytes:
                    raise errors.TraceTooLargeError(
                        self.name, f"decompressed size exceeds the {self.max_bytes / 2**30:.1f} GiB limit")
                if self.sha is not None:
                    self.sha.update(chunk)
                queue.put((chunk, self._position()))
            queue.put(None)
        except BaseException as e:  # noqa: BLE001 - handed to the consuming thread
            queue.put(e)

    def _position(self) -> int:
        try:
            return self._raw.tell()
        except (OSError, ValueError):
            return 0

    def _decompressing(self) -> BinaryIO:
        head = self._raw.peek(2)[:2] if hasattr(self._raw, "peek") else b""
        if head == b"\x1f\x8b":
            return gzip.GzipFile(fileobj=self._raw, mode="rb")  # type: ignore[return-value]
        return self._raw

    def _read(self, stream: BinaryIO) -> bytes:
        try:
            return stream.read(CHUNK_BYTES)
        except EOFError as e:
            raise errors.CorruptGzipError(self.name, "the gzip data ends early: the file is truncated") from e
        except (gzip.BadGzipFile, zlib.error) as e:
            raise errors.CorruptGzipError(self.name, f"the gzip data is corrupt ({e})") from e
        except OSError as e:
            if isinstance(stream, gzip.GzipFile):
                raise errors.CorruptGzipError(self.name, f"the gzip data is corrupt ({e})") from e
            raise errors.TraceError(self.name, f"cannot be read ({e.strerror or e})") from e

    def _report(self, position: int) -> None:
        if self.progress and self._total:
            self.progress(min(1.0, position / self._total))


def open_raw(src: Source, name: str) -> tuple[io.BufferedReader, int, bool]:
    """A buffered binary reader over the source, its total size if known, and whether we own it."""
    if isinstance(src, (bytes, bytearray, memoryview)):
        return io.BufferedReader(io.BytesIO(bytes(src))), len(src), True
    if isinstance(src, (str, os.PathLike)):
        return open_file(src, name), os.path.getsize(src), True
    if not hasattr(src, "read"):
        raise errors.TraceError(name, f"is not a path, bytes or a binary file (got {type(src).__name__})")
    total = getattr(src, "size", None)
    reader = src if hasattr(src, "peek") else io.BufferedReader(_ReadOnly(src))
    return reader, total or 0, False  # type: ignore[return-value]


def open_file(path: str | os.PathLike, name: str) -> io.BufferedReader:
    """A regular file opened for reading. Opened without blocking, then checked: a FIFO (which
    would wait forever for a writer), a device or a folder is refused in one line."""
    try:
        f = open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK))  # noqa: SIM115
    except OSError as e:
        raise errors.TraceError(name, f"cannot be read ({e.strerror or e})") from e
    if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
        f.close()
        raise errors.TraceError(name, "is not a regular file (a pipe, device or folder): only files are read")
    return f


class _ReadOnly(io.RawIOBase):
    """Adapts any object with read() (e.g. a Streamlit UploadedFile) to a raw stream."""

    def __init__(self, f: Any):
        self._f = f

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self._f.read(len(b))
        b[: len(data)] = data
        return len(data)

    def tell(self) -> int:
        return self._f.tell()


def display_name(src: Source, name: str | None) -> str:
    """The name a trace is stored under: `name`, else its file's; always text (UTF-8)."""
    if name:
        return utf8_text(name)
    if isinstance(src, (str, os.PathLike)):
        return utf8_text(Path(src).name)
    found = getattr(src, "name", None)
    return utf8_text(found) if isinstance(found, str) and found else "uploaded trace"


def utf8_text(name: str) -> str:
    """`name` as UTF-8 text: bytes of a file name that are not UTF-8 (which Python keeps as lone
    surrogates) become U+FFFD, so a valid trace is never refused for its name."""
    try:
        return name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    except UnicodeEncodeError:
        return name.encode("utf-8", "replace").decode("utf-8")
