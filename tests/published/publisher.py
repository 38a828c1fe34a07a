"""A publisher process of its own, for the publish-lock tests: publishes ``FINDATA_HOME``'s build
warehouse once (``python -m tests.published.publisher``) and prints what it did as JSON;
what the lock told it goes to stderr."""

from __future__ import annotations

import json
import sys
import uuid

from findata.clock import SystemClock
from findata.published.publish import publish
from findata.settings import get_settings


def main() -> None:
    """Publish once; the result on stdout."""
    result = publish(
        get_settings(),
        run_id=uuid.uuid4().hex,
        clock=SystemClock(),
        say=lambda message: print(message, file=sys.stderr, flush=True),
    )
    print(json.dumps({"version": result.version, "records": result.records}))


if __name__ == "__main__":
    main()
