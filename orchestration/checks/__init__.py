"""Dataset contracts as Great Expectations suites; see ``orchestration.contract_checks``."""
