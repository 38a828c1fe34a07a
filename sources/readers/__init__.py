"""Readers for landing files in their publishers' real formats; each returns typed rows."""
