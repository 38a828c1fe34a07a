"""The control plane's accounts: accounts and their plans, API keys (stored hashed), usage counters.

Tables live in ``findata.accounts.tables``; their Alembic migrations are in the control plane's one
migration history (``findata/control_plane/migrations``), since they share one database.
"""
