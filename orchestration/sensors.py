"""Start a refresh when landing files appear or change."""

import hashlib

import dagster as dg

from findata.settings import get_settings


def landing_fingerprint() -> str:
    """A hash of every landing file's path, size and modification time."""
    landing = get_settings().landing_dir
    digest = hashlib.sha256()
    if landing.exists():
        for path in sorted(p for p in landing.rglob("*") if p.is_file()):
            stat = path.stat()
            digest.update(
                f"{path.relative_to(landing)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode()
            )
    return digest.hexdigest()


def build_landing_sensor(job_name: str) -> dg.SensorDefinition:
    """A sensor that requests the job ``job_name`` once per new state of landing."""

    @dg.sensor(
        job_name=job_name,
        minimum_interval_seconds=60,
        default_status=dg.DefaultSensorStatus.STOPPED,
    )
    def new_landing_files(context: dg.SensorEvaluationContext) -> dg.SensorResult:
        fingerprint = landing_fingerprint()
        if fingerprint == context.cursor:
            return dg.SensorResult(skip_reason="landing unchanged")
        return dg.SensorResult(
            run_requests=[dg.RunRequest(run_key=fingerprint)], cursor=fingerprint
        )

    return new_landing_files
