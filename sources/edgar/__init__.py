"""Fetching the SEC's public files (EDGAR) into landing: ``fetch.py`` says what is fetched and
where it lands; ``client.py`` how politely (identity, backoff), ``rate_limit.py`` the one rate of
a home, ``bodies.py`` the checks before anything lands, ``manifest.py`` what was fetched (resume,
conditional requests), ``form_index.py`` and ``universe.py`` the SEC's index and company list."""
