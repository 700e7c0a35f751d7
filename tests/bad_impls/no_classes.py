"""A variant module that provides none of the component classes."""
