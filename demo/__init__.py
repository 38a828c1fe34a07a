"""The demo universe: a deterministic, seeded set of landing files in publishers' real formats."""
