"""What a contract check reports: pass/fail, row count, one line per failed expectation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

_EXAMPLES = 5


#: GE's severity of a failure that stops the publish (the contract's other level: ``warning``)
BLOCKING = "critical"


class ContractFailure(NamedTuple):
    """One failed expectation: its GE type, the column(s) it is about, what was seen, the
    contract rule, and GE's severity (``critical`` stops the publish, ``warning`` does not)."""

    expectation: str
    columns: tuple[str, ...]
    summary: str
    rule: str = ""
    severity: str = BLOCKING

    @property
    def blocking(self) -> bool:
        """Whether this failure stops the publish."""
        return self.severity == BLOCKING


@dataclass(frozen=True)
class ContractCheckResult:
    """One dataset checked against its contract.

    ``success``: no blocking failure (warnings, the contract's ``checks.warn`` rules, do not
    count; GE's own ``validation["success"]`` is false on any failure).
    ``validation`` and ``suite`` are GE's own JSON (``ExpectationSuiteValidationResult`` and
    ``ExpectationSuite``); :func:`findata.orchestration.checks.data_docs.write_data_docs`
    renders them.
    ``method`` says how the data was read (see ``findata.orchestration.contract_checks``).
    """

    dataset: str
    success: bool
    row_count: int
    failures: tuple[ContractFailure, ...]
    validation: dict[str, Any] = field(repr=False)
    suite: dict[str, Any] = field(repr=False)
    method: str = "pandas"

    @property
    def failed_expectations(self) -> set[str]:
        """The GE expectation types that failed."""
        return {f.expectation for f in self.failures}

    @property
    def warnings(self) -> tuple[ContractFailure, ...]:
        """The failures that do not stop the publish."""
        return tuple(f for f in self.failures if not f.blocking)


def no_blocking_failure(failures: tuple[ContractFailure, ...]) -> bool:
    """Whether none of ``failures`` stops the publish (a check's ``success``)."""
    return not any(f.blocking for f in failures)


def _columns(expectation: str, kwargs: dict[str, Any]) -> tuple[str, ...]:
    if expectation.startswith("expect_table_"):
        return ()
    if "column" in kwargs:
        return (kwargs["column"],)
    if "column_A" in kwargs:
        return (kwargs["column_A"], kwargs["column_B"])
    return tuple(kwargs.get("column_list") or ())


def _plain(value: Any) -> Any:
    """Numpy scalars as Python ones (so ``0.5``, not ``np.float64(0.5)``), inside lists too."""
    if isinstance(value, list | tuple):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    item = getattr(value, "item", None)
    return item() if callable(item) and not isinstance(value, str) else value


def _summary(
    result: dict[str, Any], exception: dict[str, Any] | None, kwargs: dict[str, Any]
) -> str:
    if exception:
        messages = [
            info.get("exception_message")
            for info in ([exception] if "raised_exception" in exception else exception.values())
            if isinstance(info, dict) and info.get("raised_exception")
        ]
        if messages:
            return "error: " + "; ".join(str(m) for m in messages)
    if "unexpected_count" in result:
        text = f"{result['unexpected_count']} unexpected of {result.get('element_count')} rows"
        examples = result.get("partial_unexpected_counts") or [
            {"value": v} for v in result.get("partial_unexpected_list") or []
        ]
        if examples:
            shown = ", ".join(
                f"{_plain(e['value'])!r}" + (f" x{e['count']}" if e.get("count", 1) > 1 else "")
                for e in examples[:_EXAMPLES]
            )
            text += f"; e.g. {shown}"
        return text
    if "observed_value" in result:
        text = f"observed {_plain(result['observed_value'])!r}"
        if "column_list" in kwargs:
            text += f"; expected {kwargs['column_list']!r}"
        elif "min_value" in kwargs or "max_value" in kwargs:
            low, high = kwargs.get("min_value"), kwargs.get("max_value")
            if high is None:
                text += f"; expected at least {low!r}"
            elif low is None:
                text += f"; expected at most {high!r}"
            else:
                text += f"; expected between {low!r} and {high!r}"
        elif "type_list" in kwargs:
            text += f"; expected one of {kwargs['type_list']!r}"
        return text
    return "failed"


def failures_of(validation: dict[str, Any]) -> tuple[ContractFailure, ...]:
    """The failed expectations of a GE validation result (as JSON), in suite order."""
    failures = []
    for item in validation["results"]:
        if item["success"]:
            continue
        config = item["expectation_config"]
        kwargs = config.get("kwargs") or {}
        failures.append(
            ContractFailure(
                expectation=config["type"],
                columns=_columns(config["type"], kwargs),
                summary=_summary(item.get("result") or {}, item.get("exception_info"), kwargs),
                rule=(config.get("meta") or {}).get("rule", ""),
                severity=config.get("severity") or BLOCKING,
            )
        )
    return tuple(failures)
