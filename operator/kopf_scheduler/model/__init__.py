"""Typed, read-only views over raw Kubernetes objects, and the arithmetic they need.

Watch events arrive as plain dicts; building client-library model objects for each one costs an
order of magnitude more than reading the dict. The views here parse exactly what scheduling needs,
once, and reject malformed input with an error that names the offending field.
"""
