"""Getting data: the readers of the publishers' real formats, and landing read into raw tables.

No Dagster here: the assets in ``findata.orchestration`` call these."""
