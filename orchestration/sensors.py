"""Start a refresh when landing files appear or change."""

import hashlib

import dagster as dg

from findata.settings import get_settings


def landing_fingerprint() -> str | None:
    """A hash of every landing file's path, size and modification time; None when landing
    holds no file."""
    landing = get_settings().landing_dir
    files = sorted(p for p in landing.rglob("*") if p.is_file()) if landing.exists() else []
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        stat = path.stat()
        digest.update(f"{path.relative_to(landing)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def build_landing_sensor(
    job_name: str, default_status: dg.DefaultSensorStatus = dg.DefaultSensorStatus.STOPPED
) -> dg.SensorDefinition:
    """A sensor that requests the job ``job_name`` once per new state of landing."""

    @dg.sensor(
        job_name=job_name,
        minimum_interval_seconds=60,
        default_status=default_status,
    )
    def new_landing_files(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        fingerprint = landing_fingerprint()
        if fingerprint is None:
            # running by default, it would otherwise request a run on a new, empty home
            return dg.SensorResult(skip_reason="landing is empty")
        if fingerprint == context.cursor:
            return dg.SensorResult(skip_reason="landing unchanged")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=fingerprint)], cursor=fingerprint
        )

    return new_landing_files
