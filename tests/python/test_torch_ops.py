"""torch.ops.fusedops.* on a GPU (issue 8). Skips with a reason without PyTorch or a GPU.

Run: FUSEDOPS_LIBRARY=build/libfusedops.so PYTHONPATH=python python3 -m unittest tests/python/test_torch_ops.py
"""
import os
import sys
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

try:
    import torch
    HAVE_GPU = torch.cuda.is_available()
except ImportError:  # the test machine has no PyTorch
    torch = None
    HAVE_GPU = False

REASON = "PyTorch is not installed" if torch is None else "no CUDA GPU"


@unittest.skipUnless(HAVE_GPU, REASON)
class TorchOpsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        import fusedops.torch  # noqa: F401  registers the ops

    def tol(self, dtype):
        return {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]

    def test_matches_torch(self):
        for dtype in (torch.float32, torch.float16, torch.bfloat16):
            for shape in [(1, 1), (3, 17), (97, 781), (8, 4, 1000), (2, 70000)]:
                x = torch.randn(shape, device="cuda", dtype=dtype) * 4
                for op, ref in ((torch.ops.fusedops.softmax, torch.softmax),
                                (torch.ops.fusedops.log_softmax, torch.log_softmax)):
                    got = op(x, -1)
                    want = ref(x.double(), -1)
                    self.assertFalse(torch.isnan(got).any())
                    torch.testing.assert_close(got.double(), want, atol=self.tol(dtype),
                                               rtol=self.tol(dtype))

    def test_strided_and_other_dim(self):
        x = torch.randn(64, 300, device="cuda")[:, :257]  # rows with a stride, no copy
        torch.testing.assert_close(torch.ops.fusedops.softmax(x, -1), torch.softmax(x, -1))
        y = torch.randn(5, 33, 7, device="cuda")
        torch.testing.assert_close(torch.ops.fusedops.softmax(y, 1), torch.softmax(y, 1))

    def test_opcheck(self):
        x = torch.randn(16, 1024, device="cuda", dtype=torch.bfloat16)
        torch.library.opcheck(torch.ops.fusedops.softmax.default, (x, -1))
        torch.library.opcheck(torch.ops.fusedops.log_softmax.default, (x, -1))

    def test_errors(self):
        with self.assertRaisesRegex(ValueError, "CUDA tensor"):
            torch.ops.fusedops.softmax(torch.randn(4, 4), -1)
        with self.assertRaisesRegex(TypeError, "not supported"):
            torch.ops.fusedops.softmax(torch.randn(4, 4, device="cuda").double(), -1)
        x = torch.randn(4, 4, device="cuda", requires_grad=True)
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            torch.ops.fusedops.softmax(x, -1).sum().backward()

    def test_compile_fullgraph_and_cuda_graph(self):
        def block(x, w):
            h = torch.ops.fusedops.softmax(x @ w, -1)
            return torch.ops.fusedops.log_softmax(h * 3.0, -1)

        x = torch.randn(256, 512, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(512, 1024, device="cuda", dtype=torch.bfloat16)
        eager = block(x, w)
        compiled = torch.compile(block, fullgraph=True)(x, w)
        torch.testing.assert_close(compiled, eager)
        static_x = x.clone()
        g = torch.cuda.CUDAGraph()
        block(static_x, w)  # warm-up outside the capture
        with torch.cuda.graph(g):
            static_out = block(static_x, w)
        static_x.copy_(torch.randn_like(x))
        g.replay()
        torch.testing.assert_close(static_out, block(static_x, w))

    def test_overhead(self):
        """Per-call overhead of the torch op over a direct C call (recorded, not asserted)."""
        import fusedops._lib as lib
        x = torch.randn(4, 64, device="cuda")
        y = torch.empty_like(x)
        c = lib.library()
        stream = torch.cuda.current_stream().cuda_stream
        n = 2000
        for _ in range(100):
            torch.ops.fusedops.softmax(x, -1)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(n):
            torch.ops.fusedops.softmax(x, -1)
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        for _ in range(n):
            c.tile_softmax(0, y.data_ptr(), x.data_ptr(), 4, 64, 64, 64, stream)
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        print(f"\nper call: torch op {1e6 * (t1 - t0) / n:.1f} us, direct C {1e6 * (t2 - t1) / n:.1f} us")


if __name__ == "__main__":
    unittest.main()
