"""python_exit.py - a program that leaves without the interpreter's
clean-up (os._exit), run by tests/python_steps.sh under memflow run: what
torch's import holds at exit is held at exit, not a leak; what the
program's own lines allocated and never released are leaks."""
import os
import torch  # IMPORT
keep = bytearray(2_000_000)  # OWN
t = torch.zeros(250_000)  # TENSOR
os._exit(0)
