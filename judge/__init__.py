"""judge: a calibrated LLM-as-judge service for evaluating AI agents."""

__version__ = "0.1.0"
