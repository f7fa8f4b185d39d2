"""The hls4ml backend: export of a deployment graph to hls4ml, and its cost model."""
