"""Several hosts on one machine: the `netns` transport, its nemeses, histories and checker.

See README.md in this folder. Importing the package touches nothing; namespaces are
made only when a netns kit builds a topology.
"""
