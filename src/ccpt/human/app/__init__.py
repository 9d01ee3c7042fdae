"""`ccpt human serve`: a small local web app over the human-study sheets ccpt exports.

Modules: :mod:`studies` (reading the exported sheets into items, and checking answers), :mod:`assign`
(who answers what), :mod:`store` (SQLite in WAL mode: annotators, assignments, answers), :mod:`app` (the
Starlette routes and server-rendered pages), :mod:`export` (the CSVs the existing importers read) and
:mod:`server` (running it). Only the CLI imports this package; the core modules never do.
"""
