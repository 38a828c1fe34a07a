"""Dataset contracts as Great Expectations suites; see ``findata.orchestration.contract_checks``."""
