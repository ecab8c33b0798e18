"""A per-document time limit for pure-Python work (trafilatura) that cannot be cancelled
from outside.

``with deadline(seconds): ...`` raises :class:`DocumentTimeout` inside the block once
``seconds`` have passed, and again every 50 ms until the block exits, so code that
swallows the first one (a bare ``except:``) is still stopped. :class:`DocumentTimeout`
derives from ``BaseException`` so ordinary ``except Exception`` handlers in the library
do not catch it. Two mechanisms, chosen per call:

* in the main thread (a Ray task, a plain script): ``SIGALRM`` through
  ``signal.setitimer``; the handler raises;
* in any other thread (Ray Data runs actor UDFs in a worker thread, tests may use a
  thread pool): a watchdog thread that injects the exception into the working thread
  with ``PyThreadState_SetAsyncExc``.

An alarm already armed by someone else (pytest-timeout, a harness) is re-armed with its
remaining time when the block exits. Both deliver the exception at the next Python bytecode; a single long call into C (an
lxml parse) is not interrupted until it returns, which is why ``extract`` also caps the
input size. The exception never escapes the ``with`` block after it has exited: the
timer/watchdog is disarmed and any pending injected exception cleared before
``__exit__`` returns.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from typing import Iterator

_REPEAT_S = 0.05


class DocumentTimeout(BaseException):
    """The time limit of one document ran out."""


class _State:
    __slots__ = ("done", "fired", "lock")

    def __init__(self) -> None:
        self.done = False
        self.fired = False
        self.lock = threading.Lock()


@contextlib.contextmanager
def deadline(seconds: float | None) -> Iterator[_State]:
    """Limit the block to ``seconds`` of wall-clock time (``None`` or <= 0: no limit)."""
    if not seconds or seconds <= 0:
        yield _State()
        return
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        with _alarm(seconds) as st:
            yield st
    else:
        with _watchdog(seconds) as st:
            yield st


@contextlib.contextmanager
def _alarm(seconds: float) -> Iterator[_State]:
    st = _State()

    def on_alarm(signum, frame):  # noqa: ARG001 - signal handler signature
        if not st.done:
            st.fired = True
            raise DocumentTimeout(f"time limit of {seconds}s exceeded")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds, _REPEAT_S)
    started = time.monotonic()
    try:
        yield st
    finally:
        while True:  # a late alarm may interrupt the disarming itself: retry until done
            try:
                st.done = True
                signal.setitimer(signal.ITIMER_REAL, 0)
                break
            except DocumentTimeout:
                continue
        signal.signal(signal.SIGALRM, previous)
        if outer_delay > 0:  # someone else's alarm (pytest-timeout, a harness): put it back
            remaining = outer_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(remaining, 0.001), outer_interval)


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                              ctypes.py_object(exc) if exc is not None else None)


@contextlib.contextmanager
def _watchdog(seconds: float) -> Iterator[_State]:
    st = _State()
    target = threading.get_ident()
    stop = threading.Event()

    def watch() -> None:
        if stop.wait(seconds):
            return
        while True:
            with st.lock:
                if st.done:
                    return
                st.fired = True
                _set_async_exc(target, DocumentTimeout)
            if stop.wait(_REPEAT_S):
                return

    watcher = threading.Thread(target=watch, name="datapipe-deadline", daemon=True)
    watcher.start()
    try:
        yield st
    finally:
        while True:  # an injected exception may land while disarming: retry until done
            try:
                with st.lock:
                    st.done = True
                    _set_async_exc(target, None)  # drop one that is pending, undelivered
                break
            except DocumentTimeout:
                continue
        stop.set()
        watcher.join()
