"""Subcommands of the judge CLI, one module per area."""
