"""Log lines of every command (standard library logging): readable text by default, one JSON
object a line with ``FINDATA_LOG_FORMAT=json`` for a log system.

A line's structured fields go in ``extra={"fields": {...}}`` (``log_fields``): JSON lines carry
them as keys, text lines as ``name=value`` after the message. No field may hold a key or a
secret: the callers pass account ids, route templates, delivery ids, versions. A line written
while an API request is answered carries that request's id (``current_request_id``, set by the
API's front door) as ``request_id``.

The API's processes (``findata serve``: its workers write one line per request) log through a
``BackgroundStderrHandler``: the thread that logs only queues the record; a thread of the
handler's formats and writes it. A write to stderr lets go of Python's GIL, and an event loop
that lets go of it waits for the request threads to give it back (up to the interpreter's
switch interval, 5 ms): a request's line written on its event loop was such a wait per
request. Every other command writes its lines as they come (``StderrHandler``).
"""

from __future__ import annotations

import datetime as dt
import io
import logging
import logging.config
import logging.handlers
import os
import queue
import re
import sys
import threading
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any, Literal

import orjson

LogFormat = Literal["text", "json"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: loggers that say what the service does at INFO; every other library only from WARNING
#: (httpx's INFO lines name every URL requested, a webhook URL's query included)
INFO_LOGGERS = ("findata", "uvicorn", "uvicorn.error")


#: the id of the API request being answered in this context (``api/front_door.py`` sets it)
current_request_id: ContextVar[str | None] = ContextVar("findata_request_id", default=None)


def log_fields(in_message: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    """``extra=`` for a line with structured fields; ``in_message`` names those the message
    already shows (a text line does not repeat them)."""
    return {"fields": fields, "fields_in_message": in_message}


class RequestIdFilter(logging.Filter):
    """Gives each record the id of the request being answered where it was logged (a
    handler's filter runs in the thread that logs; a background handler formats in another)."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id.get()
        if request_id is not None:
            record.request_id = request_id
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, the request id,
    the line's fields, and the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            entry["request_id"] = request_id
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """The readable line, its fields as ``name=value`` after the message (those without a
    value, and those the message shows, left out), then the request id."""

    def __init__(self) -> None:
        super().__init__(TEXT_FORMAT)

    def formatMessage(self, record: logging.LogRecord) -> str:
        line = super().formatMessage(record)
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            skipped = getattr(record, "fields_in_message", ())
            shown = [
                f"{name}={value}"
                for name, value in fields.items()
                if value is not None and name not in skipped
            ]
            line = " ".join([line, *shown])
        request_id = getattr(record, "request_id", None)
        if request_id is not None:
            line = f"{line} request_id={request_id}"
        return line


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to whatever ``sys.stderr`` is when a line is logged (as logging's last-resort
    handler does), so a stream swapped after configuration still gets the lines."""

    def __init__(self) -> None:
        super().__init__()

    @property
    def stream(self) -> object:  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, _value: object) -> None:
        pass


class BackgroundStderrHandler(logging.handlers.QueueHandler):
    """Writes to stderr from a thread of its own: the standard library's ``QueueHandler`` in
    front of a ``QueueListener`` whose one handler is a ``StderrHandler`` (the same line, the
    same stream). The thread that logs only merges the message with its arguments (so that a
    later change to an argument cannot change the line) and queues the record; the listener's
    thread formats and writes each record, in the order they were queued.

    ``flush`` returns once every record queued before it is written; ``close`` (which
    ``logging.shutdown`` calls at a process's exit, a uvicorn worker's too) writes those
    waiting and stops the thread, and a forced stop (``findata/shutdown.py``) flushes before it
    exits: a stop loses no line; a process killed outright loses those still queued. Python 3.11's
    ``dictConfig`` cannot make a listener (3.12's can), hence this class.
    """

    def __init__(self) -> None:
        super().__init__(queue.SimpleQueue())  # put is reentrant: a signal handler may log
        self.target = StderrHandler()
        self.listener: _FlushingListener | None = None
        self._listening_in = 0  # the pid the listener's thread runs in
        self._closed = False

    def setFormatter(self, fmt: logging.Formatter | None) -> None:
        """The target formats, in the listener's thread."""
        self.target.setFormatter(fmt)

    def prepare(self, record: logging.LogRecord) -> logging.LogRecord:
        """The record with its message merged, not formatted (``QueueHandler.prepare`` would
        format it here, in the logging thread, which is the work this class moves)."""
        if record.args:  # in place: any other handler gets the same line from it
            record.msg = record.getMessage()
            record.args = None
        return record

    def emit(self, record: logging.LogRecord) -> None:
        """Queue ``record``; the listener's thread starts with the first line of a process
        (again in a forked child, where the parent's thread is not). Once closed, lines are
        written as they come: no thread would write them later."""
        if self._closed:
            self.target.handle(self.prepare(record))
            return
        if self._listening_in != os.getpid():
            self._listen()
        super().emit(record)

    def flush(self) -> None:
        """Wait until the records queued before this call are written."""
        listener = self.listener
        if self._listening_in != os.getpid() or listener is None:
            return
        if threading.current_thread() is listener._thread:  # it would wait for itself
            return
        written = threading.Event()
        self.queue.put(written)  # type: ignore[union-attr]
        written.wait()  # untimed: timed waits never return under libfaketime (Makefile)

    def close(self) -> None:
        """Write what waits and stop the listener's thread."""
        self._closed = True
        if self.listener is not None and self._listening_in == os.getpid():
            self.listener.stop()
        self.listener = None
        self.target.close()
        super().close()

    def _listen(self) -> None:
        self.listener = _FlushingListener(self.queue, self.target)
        self.listener.start()
        self._listening_in = os.getpid()


class _FlushingListener(logging.handlers.QueueListener):
    """A ``QueueListener`` that also answers a flush: an event in the queue is set when the
    records queued before it are written."""

    def handle(self, record: logging.LogRecord | threading.Event) -> None:
        if isinstance(record, threading.Event):
            record.set()
        else:
            super().handle(record)


def logging_config(log_format: LogFormat, background: bool = False) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a command (and of each uvicorn worker, which
    applies it again in its own process): one stderr handler in the chosen format, writing
    from a thread of its own when ``background`` (the API's processes, ``api/serve.py``), its
    lines naming the request they were written for."""
    formatter = (
        "findata.logs.JsonFormatter" if log_format == "json" else "findata.logs.TextFormatter"
    )
    handler = "BackgroundStderrHandler" if background else "StderrHandler"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"findata": {"()": formatter}},
        "filters": {"request_id": {"()": "findata.logs.RequestIdFilter"}},
        "handlers": {
            "stderr": {
                "()": f"findata.logs.{handler}",
                "formatter": "findata",
                "filters": ["request_id"],
            }
        },
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": {
            **{name: {"level": "INFO"} for name in INFO_LOGGERS},
            # uvicorn's own handlers would print each line twice: its lines go to the root's
            "uvicorn": {"level": "INFO", "handlers": [], "propagate": True},
            "uvicorn.access": {"level": "WARNING"},
        },
    }


def configure_logging(log_format: LogFormat) -> None:
    """Apply ``logging_config`` to this process."""
    logging.config.dictConfig(logging_config(log_format))
    skip_unused_record_fields()


def skip_unused_record_fields() -> None:
    """Make no log record look up what no line of ours shows: the caller's file and line (a
    walk up the stack), the thread, the process (the logging HOWTO's "Optimization"). An API
    request writes one line: its cost is measured in ``benchmarks/api.py``."""
    logging._srcfile = None  # type: ignore[attr-defined]  # the HOWTO's documented switch
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False


#: a terminal's colour codes (dbt colours OK, WARN, ERROR)
_COLOUR = re.compile(r"\x1b\[[0-9;]*m")


class LinesToLog(io.TextIOBase):
    """A text stream whose every line becomes an INFO line of ``logger``: output that a library
    prints (dbt's lines, which the dbt step prints on stdout) in the command's log format."""

    def __init__(self, logger: logging.Logger) -> None:
        self._logger = logger
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        """Log each whole line written so far; a partial line waits for its end."""
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if line := _COLOUR.sub("", line).rstrip():
                self._logger.info(line)
        return len(text)

    def close(self) -> None:
        """The partial line left, logged."""
        self.write("\n")
        super().close()
