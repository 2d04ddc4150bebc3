"""Worker processes that read, normalise and encode changed sources for the one writer.

``scan --jobs N`` (issue 24; DECISIONS "Performance"): sources are independent, so a scan
with several changed sources has them acquired (each source's adapter), normalised and
encoded into event lines by N worker processes, while the scanning process stays the only
writer. It consumes every source's batches in discovery order and does everything else
exactly as with one job: detection (its windows span sources), the write windows, the
writes, the cursor commits, the index, the lock. Workers open no state and no log; they
read stores, read-only as always.

Flow: each worker has two pipes (tasks in, results out). A worker reads one source at a
time and sends its prepared batches in chunks of about ``CHUNK_BYTES``; a reader thread in
the scanning process moves them into that worker's bounded queue (``QUEUED_CHUNKS``), so a
worker ahead of the writer blocks on its pipe instead of piling up memory, and is given the
next source (in discovery order) only when it has sent the end of the previous one.

Failures: an adapter's ``SourceError`` or exception travels back as a message and is
raised in the scanning process, as if the source had been read there. A worker that dies
(killed, out of memory) closes its pipe: the source it was reading fails as one scanner
error (``worker_crashed``), nothing of it past its last committed window is committed (the
next scan reads it again), and its other assigned source goes back to the queue. Workers
ignore SIGINT and SIGTERM (the scanning process decides what an interrupt commits, then
ends them) and exit when the scanning process is gone (end of file on their task pipe, or
a broken results pipe).
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import msgspec

from telltale.errors import SourceError, UnsupportedSource
from telltale.prepared import Prepared, local_batches
from telltale.sources.base import AcquireContext
from telltale.sources.spec import Source

#: Bytes of prepared batches (event lines and observations) sent as one message.
CHUNK_BYTES = 1 << 20
#: Chunks received from one worker and not yet consumed, at most (then the worker waits).
QUEUED_CHUNKS = 8

# Message kinds, worker -> scanning process.
_CHUNK, _END, _SOURCE_ERROR, _UNSUPPORTED, _INTERNAL = range(5)
#: A reader thread's own marker: the worker's pipe closed (the worker is gone).
_GONE = -1

_encoder = msgspec.msgpack.Encoder()
_chunk_decoder = msgspec.msgpack.Decoder(list[Prepared])


class RemoteError(Exception):
    """An exception raised by an adapter in a worker (its type name; no message, no data)."""

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass
class Task:
    """One source for a worker: where it is in the scan, and how to read it."""

    index: int
    source: Source
    cursor: bytes | None
    ctx: AcquireContext


# -- the worker process -------------------------------------------------------------------
def _worker(tasks: Any, results: Any, content: str, encode: bool) -> None:
    """A worker's life: read the sources it is given until its task pipe closes."""
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, signal.SIG_IGN)
    from telltale import faults

    faults.disable(keep="worker")  # the crash harness's other fault points are the scanning process's
    while True:
        try:
            task = tasks.recv()
        except (EOFError, OSError):
            return  # the scanning process is gone or done
        if task is None:
            return
        try:
            _read(task, results, content, encode)
        except OSError:
            return  # the results pipe is closed: nobody reads them any more


def _read(task: Task, results: Any, content: str, encode: bool) -> None:
    """Send one source's prepared batches in chunks, then how it ended."""
    from telltale import faults

    send = results.send_bytes
    stream = local_batches(task.source, task.cursor, task.ctx, content, encode=encode)
    chunk: list[Prepared] = []
    size = 0
    while True:
        try:
            prepared = next(stream, None)
        except UnsupportedSource as exc:
            kind, payload = _UNSUPPORTED, _encoder.encode([exc.reason, exc.detail])
            break
        except SourceError as exc:
            kind, payload = _SOURCE_ERROR, _encoder.encode([exc.reason, exc.detail])
            break
        except Exception as exc:  # an adapter bug: its type only (a message may hold data)
            if os.environ.get("TELLTALE_DEBUG"):
                traceback.print_exc(file=sys.stderr)
            kind, payload = _INTERNAL, _encoder.encode([type(exc).__name__])
            break
        if prepared is None:
            kind, payload = _END, b""
            break
        faults.hit("worker")
        chunk.append(prepared)
        # What the chunk holds: the event lines, and observations about the size of what was read.
        size += sum(map(len, prepared.lines)) + prepared.batch.bytes_read + 64
        if size >= CHUNK_BYTES:
            send(_message(task.index, _CHUNK, _encoder.encode(chunk)))
            chunk, size = [], 0
    if chunk and kind == _END:
        send(_message(task.index, _CHUNK, _encoder.encode(chunk)))
    send(_message(task.index, kind, payload))


def _message(index: int, kind: int, payload: bytes) -> bytes:
    return index.to_bytes(4, "little") + bytes((kind,)) + payload


# -- the scanning process's side -----------------------------------------------------------
def _widen(conn: Any) -> None:
    """A results pipe that holds a whole chunk (Linux): its reader thread then takes a chunk
    in one read, instead of one per 64 KiB, each waiting for the interpreter lock the
    scanning thread holds (a convoy that left the workers blocked most of the time)."""
    try:
        import fcntl
    except ImportError:  # Windows
        return
    size = getattr(fcntl, "F_SETPIPE_SZ", None)
    if size is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(conn.fileno(), size, 2 * CHUNK_BYTES)



@dataclass
class _Worker:
    wid: int
    process: Any
    tasks: Any
    results: Any
    queue: queue.Queue[tuple[int, int, bytes]] = field(default_factory=lambda: queue.Queue(QUEUED_CHUNKS))
    #: Sources given to this worker and not yet consumed, in order.
    assigned: collections.deque[Task] = field(default_factory=collections.deque)
    busy: bool = False
    alive: bool = True
    reader: threading.Thread | None = None


class ReadPool:
    """N worker processes reading a scan's changed sources; consumed in order by :meth:`batches`."""

    def __init__(self, jobs: int, content: str, *, encode: bool, preload: Sequence[str] = ()) -> None:
        """Start ``jobs`` workers, on a thread: starting the first one waits for the
        forkserver to import the worker's modules (``preload``: the adapters of the sources
        to read, too), and the scan meanwhile builds its rule pack or reads on."""
        self.size = jobs
        self._content, self._encode = content, encode
        self._lock = threading.Lock()
        self._pending: collections.deque[Task] = collections.deque()
        self._waiting: set[int] = set()  # the indices in ``_pending``
        self._by_index: dict[int, _Worker] = {}
        #: Sources whose end (or failure) was received.
        self._ended: set[int] = set()
        self.workers: list[_Worker] = []
        self._closing = False
        self._started = threading.Event()
        self._starter = threading.Thread(target=self._start, args=(jobs, tuple(preload)), name="telltale-pool",
                                         daemon=True)
        self._starter.start()

    def _start(self, jobs: int, preload: tuple[str, ...]) -> None:
        try:
            import multiprocessing

            method = "forkserver" if "forkserver" in multiprocessing.get_all_start_methods() else "spawn"
            ctx: Any = multiprocessing.get_context(method)
            if method == "forkserver":
                # The server imports the worker's modules once; each worker is a fork of it.
                ctx.set_forkserver_preload(["telltale.readpool", "telltale.events.activity",
                                            "telltale.normalize.stage", *preload])
            for wid in range(jobs):
                if self._closing:
                    return
                task_r, task_w = ctx.Pipe(duplex=False)
                result_r, result_w = ctx.Pipe(duplex=False)
                _widen(result_r)
                process = ctx.Process(target=_worker, args=(task_r, result_w, self._content, self._encode),
                                      name=f"telltale-read-{wid}", daemon=True)
                process.start()
                task_r.close()  # the worker's ends: closed here, so its death is an end of file
                result_w.close()
                worker = _Worker(wid, process, task_w, result_r)
                worker.reader = threading.Thread(target=self._receive, args=(worker,), name=f"telltale-recv-{wid}",
                                                 daemon=True)
                worker.reader.start()
                with self._lock:
                    self.workers.append(worker)
                    self._dispatch()
        except OSError as exc:  # no process could be started: the scan reads everything itself
            if os.environ.get("TELLTALE_DEBUG"):
                print(f"telltale: --jobs: worker processes not started ({exc})", file=sys.stderr)
        finally:
            self._started.set()

    # -- scheduling ---------------------------------------------------------------------
    def submit(self, tasks: Sequence[Task]) -> None:
        """The scan's changed sources, in the order it will consume them."""
        with self._lock:
            self._pending.extend(tasks)
            self._waiting.update(t.index for t in tasks)
            self._dispatch()

    def _dispatch(self) -> None:
        """Give the next pending source to each idle, living worker (lock held)."""
        for worker in self.workers:
            if not self._pending:
                return
            if worker.alive and not worker.busy:
                task = self._pending.popleft()
                self._waiting.discard(task.index)
                try:
                    worker.tasks.send(task)
                except OSError:
                    self._pending.appendleft(task)
                    self._waiting.add(task.index)
                    worker.alive = False
                    continue
                worker.busy = True
                worker.assigned.append(task)
                self._by_index[task.index] = worker

    def _receive(self, worker: _Worker) -> None:
        """Reader thread: the worker's messages into its bounded queue; its end frees it."""
        while True:
            try:
                data = worker.results.recv_bytes()
            except (EOFError, OSError):
                worker.queue.put((-1, _GONE, b""))
                return
            index, kind = int.from_bytes(data[:4], "little"), data[4]
            worker.queue.put((index, kind, data[5:]))
            if kind != _CHUNK:
                with self._lock:
                    worker.busy = False
                    self._dispatch()

    # -- consuming ----------------------------------------------------------------------
    def batches(self, index: int, stop: Callable[[], bool]) -> Iterator[Prepared]:
        """Source ``index``'s prepared batches, as its worker sends them.

        Raises what the adapter raised (``SourceError``, ``UnsupportedSource``, or
        :class:`RemoteError` for any other exception), or ``SourceError("worker_crashed")``.
        Returns early, without its end, when ``stop()`` turns true while waiting.
        """
        while True:
            with self._lock:
                worker = self._by_index.get(index)
                orphan = None
                if worker is None and self._started.is_set() and not any(w.alive for w in self.workers):
                    orphan = next((t for t in self._pending if t.index == index), None)
                    if orphan is not None:
                        self._pending.remove(orphan)
                        self._waiting.discard(index)
            if orphan is not None:  # every worker died before taking it: read here
                yield from local_batches(orphan.source, orphan.cursor, orphan.ctx, self._content, encode=self._encode)
                self._ended.add(index)
                return
            if worker is not None:
                break
            if stop():
                return
            time.sleep(0.01)  # dispatched as soon as a worker is free
        while True:
            try:
                got, kind, payload = worker.queue.get(timeout=0.1)
            except queue.Empty:
                if stop():
                    return
                continue
            if kind == _GONE:
                self._lost(worker, index)
                code = worker.process.exitcode if worker.process.exitcode is not None else "unknown"
                raise SourceError("worker_crashed", f"the worker process reading this source died (exit {code})")
            if got < index:
                continue  # the rest of a source the scan gave up on
            if kind == _CHUNK:
                yield from _chunk_decoder.decode(payload)
                continue
            self._done(worker, index)
            self._ended.add(index)
            if kind == _END:
                return
            values = msgspec.msgpack.decode(payload)
            if kind == _UNSUPPORTED:
                raise UnsupportedSource(values[0], values[1])
            if kind == _SOURCE_ERROR:
                raise SourceError(values[0], values[1])
            raise RemoteError(str(values[0]))

    def reads(self, index: int) -> bool:
        """Whether source ``index`` is (or will be) read by a worker: ``False`` once every
        worker has died before taking it (the scan then reads it itself)."""
        with self._lock:
            worker = self._by_index.get(index)
            if worker is not None:
                return True
            alive = not self._started.is_set() or any(w.alive for w in self.workers)
            return alive and index in self._waiting

    def ended(self, index: int) -> bool:
        """Whether source ``index`` was read to its end (or its failure)."""
        return index in self._ended

    def _done(self, worker: _Worker, index: int) -> None:
        with self._lock:
            while worker.assigned and worker.assigned[0].index <= index:
                worker.assigned.popleft()
            self._by_index.pop(index, None)

    def _lost(self, worker: _Worker, index: int) -> None:
        """A worker died while source ``index`` was being consumed: that source fails (part
        of it may be staged already); the sources it was given after it go back to the
        queue, first, for the other workers."""
        worker.process.join(1.0)
        with self._lock:
            worker.alive = False
            worker.busy = False
            later = [t for t in worker.assigned if t.index > index]
            for task in worker.assigned:
                self._by_index.pop(task.index, None)
            worker.assigned.clear()
            self._pending.extendleft(reversed(later))
            self._waiting.update(t.index for t in later)
            self._dispatch()

    def close(self) -> None:
        """End the workers. They hold nothing but what they read (read-only): a worker
        still sending the rest of a source the scan gave up on is simply killed."""
        self._closing = True
        self._starter.join()
        with self._lock:
            self._pending.clear()
            self._waiting.clear()
            for worker in self.workers:
                worker.alive = False
        for worker in self.workers:
            if worker.process.is_alive():
                worker.process.kill()
            worker.tasks.close()
        for worker in self.workers:
            worker.process.join(5.0)
            # Let the reader thread see the end of the pipe (it may wait to queue a chunk).
            while worker.reader is not None and worker.reader.is_alive():
                with contextlib.suppress(queue.Empty):
                    worker.queue.get(timeout=0.05)
            worker.results.close()
