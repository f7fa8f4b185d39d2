"""The RTL backend: Verilog from the deployment graph, simulated, synthesized and placed with open tools."""
