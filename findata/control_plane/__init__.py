"""The control plane's database: SQLAlchemy Core tables and their Alembic migrations.

SQLite under ``$FINDATA_HOME`` by default, PostgreSQL with ``FINDATA_DATABASE_URL``. The
pipeline writes published versions, change records and events here; the API and the webhook
sender read them; accounts and keys join them (issue #4).
"""
