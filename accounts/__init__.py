"""The control plane: accounts, plans, keys, usage. Built in issue 4."""
