"""Routes of /v1/; each module one endpoint family."""
