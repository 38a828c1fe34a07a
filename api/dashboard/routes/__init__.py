"""The dashboard's pages, one module per concern."""
