"""Tools that test edgebnn itself: ``fuzz``, the random-model fuzzer (random models over every
layer, quantizer and option that freeze accepts, checked Keras = emulator = C-simulation = RTL
simulation bit for bit; ``bench/fuzz.py`` runs it). Its old path ``edgebnn.fuzz`` works too,
also as ``python -m edgebnn.fuzz``. Importing this package imports nothing else.
"""
