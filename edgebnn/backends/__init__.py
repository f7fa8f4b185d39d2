"""Backends: what a deployment graph becomes on a target, and what it costs there."""
