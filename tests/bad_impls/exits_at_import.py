"""A variant module that ends the whole process while it is imported."""

import os

os._exit(7)
