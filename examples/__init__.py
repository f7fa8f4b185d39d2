"""The example configurations and scripts; the configurations ship inside the package as
``edgebnn._examples`` (``edgebnn init --example NAME``)."""
