"""Deterministic checks of a run's diff and trace: versioned code, no model."""
