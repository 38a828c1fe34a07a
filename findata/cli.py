"""The ``findata`` command line (Typer): DESIGN.md's interface contract.

Commands print JSON on stdout; a refused operation prints its reason on stderr, exits 1 and
changes nothing.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer

from findata.clock import get_clock, utc_today
from findata.logs import LinesToLog, log_fields
from findata.settings import get_settings, served_base_url

if TYPE_CHECKING:
    from findata.accounts.jobs import AccountJobs
    from findata.accounts.store import Account, AccountStore
    from findata.settings import Settings
    from findata.shutdown import GracefulStop
    from findata.webhooks.endpoints import WebhookEndpoints
    from findata.webhooks.worker import DeliveryWorker

log = logging.getLogger("findata.cli")


class FindataCommands(typer.Typer):
    """The command line, whose failure is a log line: an exception that ends a command (at
    start-up, say: a database out of reach, a setting refused) is logged once in
    FINDATA_LOG_FORMAT (in JSON, one line with the traceback as a field), and the command exits
    1; not Typer's box-drawn traceback of every frame's variables. A control plane that was
    never migrated (or is behind) is the operator's to fix, not a fault: its line is the message
    naming `findata db upgrade`, without a traceback."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        except Exception as error:
            _log_failure(error)
            raise SystemExit(1) from None


def _log_failure(error: Exception) -> None:
    """``error`` as the command's last log line (logging set up here when the settings, which
    say the format, were what failed)."""
    from findata.logs import configure_logging

    if not _logging_configured.is_set():
        configure_logging(_log_format_of_environment())
    # only raised by the control plane's module: imported already when it is the error
    database = sys.modules.get("findata.control_plane.database")
    told = database is not None and isinstance(error, database.ControlPlaneNotUpgraded)
    log.critical(
        "findata failed: %s: %s",
        type(error).__name__,
        error,
        exc_info=None if told else error,
        extra=log_fields(("error",), error=type(error).__name__),
    )


def _log_format_of_environment() -> Literal["text", "json"]:
    """FINDATA_LOG_FORMAT as the settings read it, or, when they were refused, as it is set."""
    from pydantic import ValidationError

    try:
        return get_settings().log_format
    except ValidationError:
        sent = os.environ.get("FINDATA_LOG_FORMAT", "")
        return "json" if sent.strip().lower() == "json" else "text"


#: set once a command's logging is set up (``_every_command``)
_logging_configured = threading.Event()

app = FindataCommands(
    help="findata: financial data pipeline and API.", no_args_is_help=True, add_completion=False
)
accounts_app = typer.Typer(help="Accounts of the control plane.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
webhooks_app = typer.Typer(help="Webhook endpoints and deliveries.", no_args_is_help=True)
db_app = typer.Typer(help="Control-plane database.", no_args_is_help=True)
contracts_app = typer.Typer(help="Data contracts.", no_args_is_help=True)
landing_app = typer.Typer(help="Landing files.", no_args_is_help=True)
ips_app = typer.Typer(help="Refused IP addresses for keyless access.", no_args_is_help=True)
sec_app = typer.Typer(help="SEC EDGAR's public files.", no_args_is_help=True)
for name, sub in (
    ("accounts", accounts_app),
    ("keys", keys_app),
    ("webhooks", webhooks_app),
    ("db", db_app),
    ("contracts", contracts_app),
    ("landing", landing_app),
    ("ips", ips_app),
    ("sec", sec_app),
):
    app.add_typer(sub, name=name)


@app.callback()
def _every_command() -> None:
    """Log lines of every command in FINDATA_LOG_FORMAT (text by default, or json)."""
    from findata.logs import configure_logging

    configure_logging(get_settings().log_format)
    _logging_configured.set()


#: where ``findata demo`` serves
DEMO_HOST = "127.0.0.1"


class Size(StrEnum):
    small = "small"
    large = "large"


def _print_json(value: object) -> None:
    sys.stdout.write(json.dumps(value, indent=2, default=str) + "\n")


@app.command()
def demo(
    size: Annotated[Size, typer.Option(help="small (default) or large (benchmarks).")] = Size.small,
    no_serve: Annotated[bool, typer.Option("--no-serve", help="Stop after the pipeline.")] = False,
    port: Annotated[int, typer.Option(help="Port of the API.")] = 8000,
    seed: Annotated[int | None, typer.Option(help="Seed of the generator.")] = None,
) -> None:
    """Migrate the control plane, generate the demo universe if landing is empty, run the
    pipeline, then serve the API."""
    from findata.control_plane.database import upgrade
    from findata.demo.generate import DEFAULT_SEED, generate_demo, landing_is_empty

    if not no_serve:  # the refresh's events name the change feed of the API served below
        _base_url_defaults_to(DEMO_HOST, port)
    settings = get_settings()
    # the demo's home is made here: its control plane too (the refresh and the API read it)
    upgrade(settings.control_plane_url)
    if landing_is_empty(settings.landing_dir):
        result = generate_demo(
            settings.landing_dir,
            settings.demo_dir,
            size=size.value,
            seed=DEFAULT_SEED if seed is None else seed,
            today=utc_today(get_clock()),
        )
        typer.echo(
            f"demo: wrote {result.files} landing files under {result.landing_dir} "
            f"(data through {result.as_of}); scenarios in {result.scenarios_path}"
        )
    else:
        typer.echo(f"demo: landing {settings.landing_dir} is not empty; using what is there")
    _print_demo_sign_in(port)
    try:
        _refresh()  # its last line is the version (scripts read it)
    finally:
        if no_serve:
            _skip_final_collection()
    if not no_serve:
        _serve(DEMO_HOST, port, 1, webhooks=True)


def _print_demo_sign_in(port: int) -> None:
    """The demo account's sign-in for the dashboard (a new password on every run)."""
    from findata.accounts.demo_sign_in import ready_demo_sign_in
    from findata.accounts.logins import Logins
    from findata.local_secrets import dashboard_secret

    store = _accounts()
    logins = Logins(store.engine, store.clock, dashboard_secret(get_settings()))
    email, password = ready_demo_sign_in(store, logins)
    typer.echo(
        f"dashboard: http://{DEMO_HOST}:{port}/dashboard (once served): sign in as {email} "
        f"with password {password} (a Max account; a new password on every demo run)"
    )


@landing_app.command("check")
def landing_check() -> None:
    """Read every landing file with its real-format reader; print rows per source as JSON."""
    from findata.sources.landing import read_all_landing
    from findata.sources.readers.errors import MalformedFileError

    try:
        tables = read_all_landing(get_settings().landing_dir)
    except MalformedFileError as error:
        typer.echo(f"findata: malformed landing file: {error}", err=True)
        raise typer.Exit(1) from error
    _print_json(tables.summary())


def _listed(value: str | None) -> frozenset[str]:
    return frozenset(v.strip() for v in (value or "").split(",") if v.strip())


@sec_app.command("fetch")
def sec_fetch(
    since: Annotated[
        str | None,
        typer.Option(
            help="First filing day (YYYY-MM-DD); default: the day after "
            "the last one fetched, or a week back on a first fetch."
        ),
    ] = None,
    until: Annotated[str | None, typer.Option(help="Last filing day (default: today).")] = None,
    forms: Annotated[
        str | None,
        typer.Option(
            help="Forms whose filings to fetch, amendments included (default: "
            "FINDATA_SEC_FORMS, 4,13F-HR,10-K,10-Q)."
        ),
    ] = None,
    tickers: Annotated[str | None, typer.Option(help="Only these companies, by ticker.")] = None,
    ciks: Annotated[str | None, typer.Option(help="Only these companies, by CIK.")] = None,
    exchanges: Annotated[
        str | None, typer.Option(help="Only companies listed on these exchanges (NYSE, Nasdaq).")
    ] = None,
) -> None:
    """Fetch the SEC's public files into landing (company list, submissions, companyfacts,
    Form 4 and 13F-HR filings of the form indexes), politely and resumably; print a JSON
    summary. Needs FINDATA_SEC_USER_AGENT."""
    import datetime as dt

    from findata.sources.edgar.client import MissingIdentity, SecBlocked, SecFetchError
    from findata.sources.edgar.fetch import fetch_sec, request_for

    settings = get_settings()
    try:
        named = tickers is not None or ciks is not None or exchanges is not None
        request = request_for(
            settings,
            since=dt.date.fromisoformat(since) if since else None,
            until=dt.date.fromisoformat(until) if until else None,
            forms=_listed(forms) if forms is not None else None,
            universe=(
                _listed(tickers),
                frozenset(int(c) for c in _listed(ciks)),
                _listed(exchanges),
            )
            if named
            else None,
        )
        summary = fetch_sec(settings, request, get_clock())
    except (ValueError, MissingIdentity) as error:
        typer.echo(f"findata: {error}", err=True)
        raise typer.Exit(2) from error
    except (SecBlocked, SecFetchError) as error:
        typer.echo(f"findata: {error}; what landed is kept, run again to resume", err=True)
        raise typer.Exit(1) from error
    _print_json(summary.as_json())


def _refresh(*, force: bool = False) -> None:
    from findata.orchestration.refresh import run_refresh

    settings = get_settings()
    # dbt's lines (the dbt step prints them on stdout) and the outcome go to stderr: stdout is the
    # version alone, as scripts read it; in JSON, each of dbt's lines is a log line too
    as_json = settings.log_format == "json"
    dbt_lines = LinesToLog(logging.getLogger("findata.dbt")) if as_json else sys.stderr
    with contextlib.redirect_stdout(dbt_lines):
        outcome = run_refresh(settings, force=force)
    if as_json:
        dbt_lines.close()

    def tell(message: str) -> None:
        if as_json:
            log.info(message)
        else:
            typer.echo(message, err=True)

    if not outcome.success:
        checks = (
            f" (failed checks: {', '.join(outcome.failed_checks)})" if outcome.failed_checks else ""
        )
        tell(
            f"findata: refresh run {outcome.run_id} failed{checks}; nothing was "
            "published and the current version stays current"
        )
        raise typer.Exit(1)
    if outcome.unchanged_since is not None:
        run = f"run {outcome.run_id} stopped at its first step" if outcome.run_id else "no run"
        typer.echo(
            f"refresh: nothing changed; no new version (landing, code and contracts are as "
            f"when {outcome.unchanged_since} was built: {run})"
        )
    elif outcome.version is None:
        typer.echo(f"refresh {outcome.run_id}: nothing changed; no new version")
    else:
        typer.echo(outcome.version)
        tell(
            f"refresh {outcome.run_id}: published {outcome.version} with "
            f"{outcome.records} change records"
        )
    if outcome.warned_checks:
        tell(
            f"refresh {outcome.run_id}: checks with warnings (not blocking): "
            f"{', '.join(outcome.warned_checks)}"
        )


@app.command()
def refresh(
    force: Annotated[
        bool,
        typer.Option(help="Build even when nothing changed since the current version was built."),
    ] = False,
) -> None:
    """Run the whole pipeline once on what is in landing; print the new version. When landing,
    code and contracts are as they were when the current version was built, nothing runs."""
    try:
        _refresh(force=force)
    finally:
        _skip_final_collection()


def _skip_final_collection() -> None:
    """The process is about to exit: its last garbage collection may skip every object alive
    now (``gc.freeze``). A refresh has imported Dagster, dbt, Great Expectations, DuckDB and
    pandas, and that collection walked their millions of objects: ~1.2 s of every refresh's
    exit. The exit handlers still run (logging, multiprocessing, Dagster's and DuckDB's
    connections are closed already)."""
    import gc

    gc.freeze()


@app.command()
def serve(
    host: Annotated[str, typer.Option()] = "127.0.0.1",
    port: Annotated[int, typer.Option()] = 8000,
    workers: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Worker processes (default FINDATA_WORKERS, else one per core on PostgreSQL "
            "or with a Redis cache, one on SQLite).",
        ),
    ] = None,
    webhooks: Annotated[
        bool, typer.Option("--webhooks", help="Also run the webhook delivery worker.")
    ] = False,
) -> None:
    """Migrate the control plane, then serve the API (uvicorn; each worker builds the app from
    the environment)."""
    _serve(host, port, workers, webhooks)


def _serve(host: str, port: int, workers: int | None, webhooks: bool) -> None:
    """The API until SIGTERM or SIGINT, with the account jobs (and the delivery worker) beside
    it; on the signal every part takes no new work and finishes what is in flight within the
    grace period (``findata/shutdown.py``, ``api/serve.py``)."""
    import os

    from findata.api.serve import join_within, serve_api
    from findata.control_plane.database import upgrade
    from findata.shutdown import GracefulStop

    if workers is not None:  # every worker reads it, to choose its usage counters
        os.environ["FINDATA_WORKERS"] = str(workers)
    _base_url_defaults_to(host, port)
    settings = get_settings()
    workers = settings.serve_workers
    upgrade(settings.control_plane_url)  # once here, not racing in every worker
    log.info(
        "%d worker(s), quota counters in %s; links in e-mail and events name %s",
        workers,
        settings.counters_kind,
        settings.base_url,
        extra=log_fields(
            ("workers", "counters", "base_url"),
            workers=workers,
            counters=settings.counters_kind,
            base_url=settings.base_url,
        ),
    )
    stop = GracefulStop(settings.shutdown_grace_seconds, "findata serve")
    # e-mail, invitation trials and renewals beside the API (safe beside other hosts' runs)
    beside = [_beside_the_api("account-jobs", _account_jobs().run, stop, settings)]
    if webhooks:
        # one delivery worker beside the API in this process (others may run elsewhere)
        beside.append(_beside_the_api("webhook-worker", _delivery_worker().run, stop, settings))
    answered_all = serve_api(host, port, workers, stop, settings.log_format)
    # the API's workers are done: the work beside them finishes within what is left of the
    # grace period (a worker that stopped without a signal stops it too)
    stop.request("the API stopped")
    join_within(beside, stop.remaining())
    if not answered_all:  # requests were cut short (answered 503): not a clean stop
        stop.force("the grace period ran out with requests in flight")
    stop.finished()


def _base_url_defaults_to(host: str, port: int) -> None:
    """Links in e-mail and the events' change-feed URLs name where this command serves
    (``served_base_url``) unless FINDATA_BASE_URL is set: put in the environment, which every
    part of the command reads (the API's worker processes, the jobs beside them, a refresh)."""
    if "base_url" not in get_settings().model_fields_set:
        os.environ["FINDATA_BASE_URL"] = served_base_url(host, port)


def _beside_the_api(
    name: str, run: Callable[[threading.Event, float], None], stop: GracefulStop, settings: Settings
) -> threading.Thread:
    """A started thread running ``run(stopping, poll_seconds)``, told to stop with the API."""
    stopping = threading.Event()
    stop.on_stop(stopping.set)
    thread = threading.Thread(
        target=run, args=(stopping, settings.webhooks_poll_seconds), name=name, daemon=True
    )
    thread.start()
    return thread


@app.command()
def ui(
    port: Annotated[int, typer.Option()] = 3000,
    host: Annotated[
        str, typer.Option(help="Where the webserver listens (0.0.0.0 in a container).")
    ] = "127.0.0.1",
) -> None:
    """The Dagster UI (and daemon: schedule, sensor) on the same FINDATA_HOME and instance
    (PostgreSQL when the control plane is). SIGTERM or SIGINT stops every Dagster process
    within the grace period."""
    import os
    import signal
    import subprocess

    import sqlalchemy as sa

    from findata.control_plane.database import require_upgraded
    from findata.orchestration.dagster_instance import prepare_dagster_home
    from findata.shutdown import GracefulStop

    settings = get_settings()
    # the runs the UI and the schedule launch publish to it: refused now, not in every run
    require_upgraded(settings.control_plane_url)
    dagster_home = prepare_dagster_home(settings)
    # run in DAGSTER_HOME: `dagster dev` warns that a dagster.yaml in its working folder is
    # ignored when DAGSTER_HOME is elsewhere; the home, made absolute, stays the same
    os.environ["FINDATA_HOME"] = str(settings.home_dir)
    url = sa.make_url(settings.control_plane_url)
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        # a SQLite control plane named by a relative path: the same file from there
        absolute = url.set(database=str(Path(url.database).resolve()))
        os.environ["FINDATA_DATABASE_URL"] = absolute.render_as_string(hide_password=False)
    dagster = Path(sys.executable).parent / "dagster"
    command = [
        *(str(dagster), "dev", "-m", "findata.orchestration.definitions"),
        *("-p", str(port), "-h", host),
        # Dagster's own lines (webserver, daemon) as JSON lines too, by its own option
        *(["--log-format", "json"] if settings.log_format == "json" else []),
    ]
    stop = GracefulStop(settings.shutdown_grace_seconds, "findata ui")
    # before the start: `dagster dev` then handles SIGINT and SIGTERM (it would ignore both if
    # this command was started with SIGINT ignored, as a shell's background job is)
    stop.install()
    # its own process group: the webserver, daemon and code servers are signalled together,
    # and whatever of them outlives `dagster dev` is found there
    dagster_dev = subprocess.Popen(
        command, cwd=dagster_home, start_new_session=True, env=_without_dev_notice(os.environ)
    )
    group = dagster_dev.pid
    stop.on_stop(lambda: _signal_group(group, signal.SIGTERM))
    stop.on_force(lambda: _signal_group(group, signal.SIGKILL))
    status = dagster_dev.wait()
    signalled = stop.requested.is_set()
    if _signal_group(group, signal.SIGTERM):  # children left behind by `dagster dev`
        stop.request("dagster dev exited before its processes")
        while _signal_group(group, 0):
            time.sleep(0.1)  # the stop's watchdog kills the group when the grace runs out
    stop.finished()
    raise typer.Exit(0 if signalled else status)


#: what `dagster dev` says of itself before its logging is set up (a plain line in a JSON
#: stream), to this project's developers: `dg dev` (a project layout findata does not use)
#: supersedes it
DEV_COMMAND_NOTICE = "ignore:Function `dev_command` is superseded:FutureWarning"


def _without_dev_notice(environ: Mapping[str, str]) -> dict[str, str]:
    """``environ`` with Python's warning filter of ``DEV_COMMAND_NOTICE`` added
    (PYTHONWARNINGS)."""
    filters = [environ["PYTHONWARNINGS"]] if environ.get("PYTHONWARNINGS") else []
    return {**environ, "PYTHONWARNINGS": ",".join([*filters, DEV_COMMAND_NOTICE])}


def _signal_group(group: int, signum: int) -> bool:
    """Send ``signum`` to the process group ``group``; False when no process is left in it."""
    import os

    try:
        os.killpg(group, signum)
    except ProcessLookupError:
        return False
    return True


@app.command()
def mcp(
    url: Annotated[str, typer.Option(help="The findata service, e.g. https://findata.example")],
) -> None:
    """The service's MCP tools over stdio, for MCP clients that launch a command; the key is
    read from FINDATA_API_KEY (without it, the client's first request gets an MCP error saying
    so: an MCP client shows that, not a command that exits)."""
    import os

    import anyio

    from findata.api.mcp.stdio_proxy import KEY_VARIABLE, serve_stdio

    anyio.run(serve_stdio, url, os.environ.get(KEY_VARIABLE, ""))


def _accounts() -> AccountStore:
    from findata.accounts.store import AccountStore
    from findata.control_plane.database import engine_for

    return AccountStore(engine_for(get_settings().control_plane_url), get_clock())


@contextmanager
def _refusals() -> Iterator[None]:
    """A refused account, key or webhook operation: the reason on stderr, exit 1, no change."""
    from findata.accounts.store import AccountError
    from findata.webhooks.endpoints import WebhookRefused

    try:
        yield
    except (AccountError, WebhookRefused) as error:
        typer.echo(f"findata: {error}", err=True)
        raise typer.Exit(1) from error


def _account_json(account: Account) -> dict[str, object]:
    return {
        "account_id": account.id,
        "email": account.email,
        "plan": account.plan,
        "state": account.state,
        "created_at": account.created_at.isoformat(),
    }


@accounts_app.command("create")
def accounts_create(
    email: Annotated[str, typer.Option()],
    plan: Annotated[str, typer.Option(help="free, pro, max or redistribution")],
) -> None:
    """Create an account; prints JSON with account_id."""
    with _refusals():
        _print_json(_account_json(_accounts().create_account(email, plan)))


@accounts_app.command("disable")
def accounts_disable(account_id: str) -> None:
    """Disable an account: its keys get 403 account_disabled."""
    with _refusals():
        _print_json(_account_json(_accounts().set_state(account_id, "disabled")))


@accounts_app.command("enable")
def accounts_enable(account_id: str) -> None:
    """Enable a disabled account."""
    with _refusals():
        _print_json(_account_json(_accounts().set_state(account_id, "enabled")))


@accounts_app.command("set-plan")
def accounts_set_plan(account_id: str, plan: str) -> None:
    """Move an account to another plan (keys beyond the new plan's limit are revoked, oldest
    first)."""
    with _refusals():
        account, revoked = _accounts().set_plan(account_id, plan)
        _print_json({**_account_json(account), "revoked_key_ids": revoked})


@keys_app.command("create")
def keys_create(
    account: Annotated[str | None, typer.Option(help="An existing account's id.")] = None,
    email: Annotated[str | None, typer.Option(help="With --plan: its account, made if new.")] = (
        None
    ),
    plan: Annotated[str | None, typer.Option()] = None,
    label: Annotated[str | None, typer.Option(help="What you call the key (64 characters).")] = (
        None
    ),
) -> None:
    """Create an API key (shown once); prints JSON with account_id and key. On Free and Pro the
    account's current key is revoked (regenerate); Max and Redistribution add one up to 5 or 10."""
    from findata.accounts.store import AccountError

    store = _accounts()
    with _refusals():
        if account is not None and email is None and plan is None:
            account_id = account
        elif account is None and email is not None and plan is not None:
            found = store.find_account_by_email(email)
            if found is None:
                found = store.create_account(email, plan)
            elif found.plan != plan:
                raise AccountError(
                    f"account {found.id} ({found.email}) is on plan {found.plan}, not {plan}; "
                    f"use `findata accounts set-plan {found.id} {plan}` to move it"
                )
            account_id = found.id
        else:
            raise AccountError("give either --account ID or both --email and --plan")
        issued = store.create_key(account_id, label)
    _print_json(
        {
            **_account_json(issued.account),
            "key": issued.key,
            "key_id": issued.key_id,
            "prefix": issued.prefix,
            "label": issued.label,
            "key_created_at": issued.created_at.isoformat(),
            "revoked_key_ids": issued.revoked_key_ids,
        }
    )


@keys_app.command("revoke")
def keys_revoke(key: str) -> None:
    """Revoke an API key (requests with it get 401 naming the revocation date)."""
    from findata.accounts.store import KeyNotFound

    try:
        owner = _accounts().revoke_key(key)
    except KeyNotFound as error:
        typer.echo("findata: no such key", err=True)
        raise typer.Exit(1) from error
    assert owner.revoked_at is not None
    _print_json(
        {
            "account_id": owner.account.id,
            "key_id": owner.key_id,
            "prefix": owner.prefix,
            "revoked_at": owner.revoked_at.isoformat(),
        }
    )


@keys_app.command("list")
def keys_list(account: Annotated[str, typer.Option()]) -> None:
    """The account's keys, newest first (prefixes only; a key's value is never kept)."""
    with _refusals():
        store = _accounts()
        store.get_account(account)
        _print_json(store.list_keys(account))


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply the control-plane migrations not yet applied (a new database gets the whole
    schema; running it again changes nothing). `findata serve` and `findata demo` run it as
    they start; every other command refuses a database that is not at the newest migration."""
    from findata.control_plane.database import redacted, upgrade

    url = get_settings().control_plane_url
    upgrade(url)
    typer.echo(f"control plane at {redacted(url)} is at the newest schema")


@contracts_app.command("check")
def contracts_check(
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="Every rule on every row of every mart, in one frame each (slow on the large "
            "demo). Without it, a mart over 2 M rows has its key, not-null and row-count rules "
            "checked on every row and the rest on a sample.",
        ),
    ] = False,
) -> None:
    """Run the data contracts on the whole of every mart of the build warehouse (a refresh
    checks only the rows it changed); write Great Expectations' data docs under
    $FINDATA_HOME/contracts/data_docs; exit 1 if any contract fails (its warning-level rules
    are reported under `warnings` and do not fail it)."""
    from findata.orchestration.assets.checks import previous_row_counts
    from findata.orchestration.contract_checks import (
        FULL_CHECK_MAX_ROWS,
        run_contract_checks,
        write_data_docs,
    )
    from findata.orchestration.refresh_lock import hold_refresh_lock, refresh_lock_path

    settings = get_settings()
    if not settings.warehouse_path.exists():
        typer.echo(
            f"findata: no build warehouse at {settings.warehouse_path}; run `findata "
            "refresh` first",
            err=True,
        )
        raise typer.Exit(1)
    # the warehouse has one writer at a time: a refresh running now is waited for
    with hold_refresh_lock(
        refresh_lock_path(settings),
        f"findata contracts check, pid {os.getpid()}",
        lambda message: typer.echo(f"findata: {message}", err=True),
    ):
        results = run_contract_checks(
            settings.warehouse_path,
            "marts",
            today=utc_today(get_clock()),
            previous_counts=previous_row_counts(),
            full_check_max_rows=sys.maxsize if full else FULL_CHECK_MAX_ROWS,
        )
    docs = write_data_docs(results, settings.home_dir / "contracts" / "data_docs")
    _print_json(
        {
            "data_docs": str(docs),
            "datasets": {
                r.dataset: {
                    "success": r.success,
                    "rows": r.row_count,
                    "failures": [f.summary for f in r.failures if f.blocking],
                    "warnings": [f.summary for f in r.warnings],
                }
                for r in results
            },
        }
    )
    if not all(r.success for r in results):
        raise typer.Exit(1)


@ips_app.command("block")
def ips_block(ip: str) -> None:
    """Refuse keyless requests from IP (429 temporarily_blocked)."""
    from findata.accounts.ips import block_ip

    with _refusals():
        store = _accounts()
        _print_json({"ip": block_ip(store.engine, ip, get_clock().now()), "blocked": True})


@ips_app.command("unblock")
def ips_unblock(ip: str) -> None:
    """Accept keyless requests from IP again."""
    from findata.accounts.ips import unblock_ip

    with _refusals():
        store = _accounts()
        was_blocked = unblock_ip(store.engine, ip)
        _print_json({"ip": ip, "blocked": False, "was_blocked": was_blocked})


def _webhook_endpoints() -> WebhookEndpoints:
    from findata.control_plane.database import engine_for
    from findata.webhooks.endpoints import WebhookEndpoints
    from findata.webhooks.signing import SecretBox
    from findata.webhooks.url_safety import UrlPolicy

    settings = get_settings()
    store = _accounts()
    return WebhookEndpoints(
        engine_for(settings.control_plane_url),
        get_clock(),
        store,
        SecretBox.from_settings(settings),
        UrlPolicy.from_settings(settings),
    )


@webhooks_app.command("add")
def webhooks_add(url: str, account: Annotated[str, typer.Option()]) -> None:
    """Add an endpoint; prints JSON with endpoint_id and secret (shown once)."""
    with _refusals():
        shown = _webhook_endpoints().add(account, url)
    _print_json({**shown.endpoint.as_json(), "secret": shown.secret})


@webhooks_app.command("list")
def webhooks_list(account: Annotated[str, typer.Option()]) -> None:
    """List an account's endpoints (JSON array, oldest first; never their secrets)."""
    with _refusals():
        _print_json([e.as_json() for e in _webhook_endpoints().list(account)])


@webhooks_app.command("pause")
def webhooks_pause(endpoint_id: str) -> None:
    """Pause an endpoint: nothing is sent to it until Resume."""
    with _refusals():
        _print_json(_webhook_endpoints().pause(endpoint_id).as_json())


@webhooks_app.command("resume")
def webhooks_resume(endpoint_id: str) -> None:
    """Resume a Paused or Disabled endpoint (events created meanwhile are not sent)."""
    with _refusals():
        _print_json(_webhook_endpoints().resume(endpoint_id).as_json())


@webhooks_app.command("remove")
def webhooks_remove(endpoint_id: str) -> None:
    """Remove an endpoint with its deliveries and log (frees a place in the plan's allowance)."""
    with _refusals():
        removed = _webhook_endpoints().remove(endpoint_id)
    _print_json({**removed.as_json(), "removed": True})


@webhooks_app.command("test")
def webhooks_test(endpoint_id: str) -> None:
    """Queue a webhook.test event; the delivery worker sends it."""
    with _refusals():
        _print_json(asdict(_webhook_endpoints().send_test(endpoint_id)))


@webhooks_app.command("rotate-secret")
def webhooks_rotate_secret(endpoint_id: str) -> None:
    """A new signing secret (shown once); the old one also signs for 24 hours."""
    with _refusals():
        shown = _webhook_endpoints().rotate_secret(endpoint_id)
    _print_json({**shown.endpoint.as_json(), "secret": shown.secret})


@webhooks_app.command("log")
def webhooks_log(endpoint_id: str) -> None:
    """An endpoint's delivery log: the 50 newest deliveries of 30 days (JSON, newest first)."""
    with _refusals():
        _print_json([asdict(entry) for entry in _webhook_endpoints().log(endpoint_id)])


@webhooks_app.command("resend")
def webhooks_resend(delivery_id: str) -> None:
    """Resend a Failed or No-retries-left delivery: same event id, new signature."""
    with _refusals():
        _print_json(asdict(_webhook_endpoints().resend(delivery_id)))


@webhooks_app.command("worker")
def webhooks_worker(once: Annotated[bool, typer.Option("--once")] = False) -> None:
    """Send due deliveries (``--once``: send what is due, then exit)."""
    worker = _delivery_worker()
    if once:
        report = worker.run_once()
        _print_json(
            {
                "recovered": report.recovered,
                "fanned_out": report.fanned_out,
                "outcomes": report.outcomes,
            }
        )
        return
    from findata.shutdown import GracefulStop

    settings = get_settings()
    stop = GracefulStop(settings.shutdown_grace_seconds, "findata webhooks worker")
    stopping = threading.Event()  # no new claims; the sends in flight finish and are recorded
    stop.on_stop(stopping.set)
    stop.install()
    worker.run(stopping, settings.webhooks_poll_seconds)
    stop.finished()


def _delivery_worker() -> DeliveryWorker:
    from findata.control_plane.database import engine_for
    from findata.webhooks.worker import DeliveryWorker

    settings = get_settings()
    return DeliveryWorker.from_settings(
        settings, engine_for(settings.control_plane_url), get_clock(), _accounts()
    )


# invitations and billing (accounts/invitations.py, accounts/billing.py)

invitations_app = typer.Typer(
    help="Invitation codes: a free month of Pro or Max.", no_args_is_help=True
)
billing_app = typer.Typer(help="Billing of paid plans and invitation trials.", no_args_is_help=True)
app.add_typer(invitations_app, name="invitations")
mail_app = typer.Typer(help="E-mail to account holders (the outbox).", no_args_is_help=True)
app.add_typer(billing_app, name="billing")
app.add_typer(mail_app, name="mail")


@invitations_app.command("create")
def invitations_create(
    plan: Annotated[str, typer.Option(help="pro or max")],
    redeem_by: Annotated[
        str, typer.Option(help="The last day (UTC) a code can be redeemed, YYYY-MM-DD.")
    ],
    count: Annotated[int, typer.Option(help="How many codes.")] = 1,
) -> None:
    """Create invitation codes for 30 days of Pro or Max; prints JSON with the codes (shown
    once: only their hashes are kept)."""
    import datetime as dt

    from findata.accounts.invitations import InvitationRefused, create_invitations

    with _refusals():
        try:
            last_day = dt.date.fromisoformat(redeem_by)
        except ValueError as error:
            raise InvitationRefused(
                "redeem_by", f"--redeem-by must be a date as YYYY-MM-DD, not {redeem_by!r}"
            ) from error
        codes = create_invitations(_accounts().engine, get_clock(), plan, last_day, count)
    _print_json({"plan": plan, "redeem_by": last_day.isoformat(), "codes": codes})


@billing_app.command("run")
def billing_run() -> None:
    """Run the billing job once: trials ending soon (e-mail) and ended (billing starts, or
    back to Free when cancelled), then renewals of ended paid periods; prints JSON counts.
    Running it again at once changes nothing. (`findata serve` runs it every 5 minutes.)"""
    _print_json(_account_jobs().run_billing())


@mail_app.command("send")
def mail_send() -> None:
    """Send the e-mail that is due now (SMTP at FINDATA_SMTP_URL, else .eml files under
    $FINDATA_HOME/mail); prints JSON with how many went out. (`findata serve` sends as it
    runs.)"""
    _print_json({"sent": _account_jobs().mailer.send_due()})


def _account_jobs() -> AccountJobs:
    from findata.accounts.jobs import AccountJobs
    from findata.control_plane.database import engine_for

    settings = get_settings()
    return AccountJobs.from_settings(settings, engine_for(settings.control_plane_url), get_clock())
