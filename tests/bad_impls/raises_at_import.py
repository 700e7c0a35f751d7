"""A variant module that raises while it is imported."""

raise RuntimeError("broken on purpose at import")
