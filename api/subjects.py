"""The subjects of a request: tickers in the path or ``entity_id`` values, the plan's limit on
how many, and their resolution turned into the spec's 400, 404 and 409 answers (request rules
1, 8–10; "Errors": too many tickers, 404 details, 409)."""

from __future__ import annotations

import datetime as dt

from findata.api.errors import ApiError, BadRequest, NotFound
from findata.api.resolution import Resolution, SubjectDirectory, resolve_tickers
from findata.contracts.endpoints import Subject
from findata.contracts.plans import Plan

BOTH = "Provide either a ticker in the path or an entity_id parameter, not both."
NEITHER = "Provide a ticker in the path or an entity_id parameter."
HINT = "pass entity_id="


def parse_tickers(raw: str | None) -> list[str]:
    """The path's comma-separated tickers, upper case, each once, in order."""
    if raw is None:
        return []
    return list(dict.fromkeys(t.strip().upper() for t in raw.split(",") if t.strip()))


def check_subject_count(
    subject: Subject, plan: Plan | None, tickers: list[str], entity_ids: list[int]
) -> None:
    """400 for both kinds of subject, neither, or more than the plan allows."""
    if tickers and entity_ids:
        raise BadRequest(BOTH)
    if not tickers and not entity_ids:
        raise BadRequest(NEITHER)
    what = "ticker" if tickers else "entity_id"
    count = len(tickers or entity_ids)
    allowed = getattr(plan, subject.limit) if plan else 1
    if count <= allowed:
        return
    paid_allowance = 100 if subject.limit == "tickers_per_request" else 10
    if plan is None:
        raise BadRequest(
            f"Requests without an API key allow 1 {what}. Send a key: the Pro plan allows up to "
            f"{paid_allowance} per request."
        )
    if plan.code == "free":
        noun = "tickers" if tickers else "entity_id values"
        raise BadRequest(
            f"Free tier allows 1 {what} per request. Upgrade to Pro for up to "
            f"{paid_allowance} {noun} per request."
        )
    noun = "tickers" if tickers else "entity_id values"
    raise BadRequest(f"Maximum {allowed} {noun} per request")


def resolve_subjects(
    directory: SubjectDirectory,
    subject: Subject,
    tickers: list[str],
    entity_ids: list[int],
    on: dt.date,
) -> Resolution:
    """Resolve the request's subjects; raise 404 or 409 when none can be served."""
    if tickers:
        resolution = resolve_tickers(directory, tickers, on, subject.grain, subject.candidates)
    else:
        resolution = _resolve_entity_ids(directory, entity_ids, subject.grain)
    _refuse_when_nothing_resolved(resolution, on)
    _warn_about_the_rest(resolution, on)
    return resolution


def _resolve_entity_ids(
    directory: SubjectDirectory, entity_ids: list[int], grain: str
) -> Resolution:
    known = directory.entities_among(entity_ids)
    resolution = Resolution()
    for entity_id in entity_ids:
        name = str(entity_id)
        entity = known.get(entity_id)
        if entity is None:
            resolution.unmatched.append(name)
        elif grain == "security" and entity["entity_grain"] != "security":
            resolution.unlisted[name] = (entity["name"], entity_id)
        elif grain == "security":
            resolution.resolved[name] = [entity_id]
        else:
            resolution.resolved[name] = [entity["issuer_entity_id"]]
            if entity["entity_grain"] == "security":
                resolution.securities[name] = [entity_id]
    return resolution


def ambiguous_detail(tickers: list[str], on: dt.date) -> str:
    """The 409 detail."""
    names = ", ".join(tickers)
    return (
        f"Ambiguous ticker on {on.isoformat()}: {names} names more than one entity. "
        "Choose one of the candidates and pass entity_id=<id>."
    )


def ambiguous_ticker(resolution: Resolution, on: dt.date) -> ApiError:
    """The 409 of a request whose only tickers are ambiguous."""
    return ApiError(
        "ambiguous_ticker",
        ambiguous_detail(list(resolution.ambiguous), on),
        candidates=resolution.ambiguous,
        hint=HINT,
    )


def _refuse_when_nothing_resolved(resolution: Resolution, on: dt.date) -> None:
    if resolution.resolved:
        return
    if resolution.ambiguous:
        raise ambiguous_ticker(resolution, on)
    if resolution.unlisted:
        raise NotFound(
            f"No listed security on {on.isoformat()} for: {', '.join(resolution.unlisted)}"
        )
    raise NotFound(f"No matching entities for: {', '.join(resolution.unmatched)}")


def _warn_about_the_rest(resolution: Resolution, on: dt.date) -> None:
    for ticker in resolution.ambiguous:
        resolution.warnings.append(
            f"Ticker {ticker} is ambiguous on {on.isoformat()} and was not served; see "
            "meta.tickers_ambiguous and pass entity_id=<id>."
        )
    if resolution.unlisted:
        resolution.warnings.append(
            f"No listed security on {on.isoformat()} for: {', '.join(resolution.unlisted)}"
        )
    if resolution.unmatched:
        resolution.warnings.append(f"No matching entities for: {', '.join(resolution.unmatched)}")
