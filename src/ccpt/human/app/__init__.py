"""`ccpt human serve`: a small local web app over the human-study sheets ccpt exports (studies, assign, store, app,
export, server). Only the CLI imports this package; the core modules never do.
"""
