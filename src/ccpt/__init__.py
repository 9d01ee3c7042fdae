"""ccpt: evaluate LLMs on Conceptual Combination with Property Type (Song et al., CCPT)."""

__version__ = "0.1.0"
