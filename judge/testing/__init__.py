"""Test and benchmark fixtures that run for real (a loopback OpenAI-compatible server)."""
