"""Log lines of every command (standard library logging): readable text by default, one JSON
object a line with ``FINDATA_LOG_FORMAT=json`` for a log system.

A line's structured fields go in ``extra={"fields": {...}}`` (``log_fields``): JSON lines carry
them as keys, text lines as ``name=value`` after the message. No field may hold a key or a
secret: the callers pass account ids, route templates, delivery ids, versions.
"""

from __future__ import annotations

import datetime as dt
import logging
import logging.config
import sys
from collections.abc import Mapping
from typing import Any, Literal

import orjson

LogFormat = Literal["text", "json"]

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

#: loggers that say what the service does at INFO; every other library only from WARNING
#: (httpx's INFO lines name every URL requested, a webhook URL's query included)
INFO_LOGGERS = ("findata", "uvicorn", "uvicorn.error")


def log_fields(in_message: tuple[str, ...] = (), **fields: Any) -> dict[str, Any]:
    """``extra=`` for a line with structured fields; ``in_message`` names those the message
    already shows (a text line does not repeat them)."""
    return {"fields": fields, "fields_in_message": in_message}


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time (UTC, ISO 8601), level, logger, message, the line's fields,
    and the traceback of an exception."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": dt.datetime.fromtimestamp(record.created, dt.UTC).isoformat(
                timespec="milliseconds"
            ),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, Mapping):
            entry.update(fields)
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


class TextFormatter(logging.Formatter):
    """The readable line, its fields as ``name=value`` after the message (those without a
    value, and those the message shows, left out)."""

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


def logging_config(log_format: LogFormat) -> dict[str, Any]:
    """The ``logging.config.dictConfig`` of a command (and of each uvicorn worker, which
    applies it again in its own process): one stderr handler in the chosen format."""
    formatter = (
        "findata.logs.JsonFormatter" if log_format == "json" else "findata.logs.TextFormatter"
    )
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"findata": {"()": formatter}},
        "handlers": {"stderr": {"()": "findata.logs.StderrHandler", "formatter": "findata"}},
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
