"""Shared lesson machinery: the lesson contract and runner, results, exception capture."""
