"""Runs a unittest file that needs PyTorch and a GPU; exits 77 (ctest: skipped) without them,
so a skip never reads as a pass."""
import os
import sys
import unittest

try:
    import torch
    if not torch.cuda.is_available():
        print("SKIP: PyTorch sees no CUDA GPU")
        sys.exit(77)
except ImportError:
    print("SKIP: PyTorch is not installed")
    sys.exit(77)

path = sys.argv[1]
sys.path.insert(0, os.path.dirname(path))
suite = unittest.defaultTestLoader.discover(os.path.dirname(path), pattern=os.path.basename(path))
result = unittest.TextTestRunner(verbosity=2).run(suite)
sys.exit(0 if result.wasSuccessful() and result.testsRun > 0 else 1)
