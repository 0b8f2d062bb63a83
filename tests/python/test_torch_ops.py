"""torch.ops.fusedops.* on a GPU (issues 8 and 3; flash attention; grouped matmul). Skips with a reason without PyTorch or a GPU.

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

    def test_expanded_rows(self):
        """Rows that share memory (stride 0, or closer than a row) are copied, not read at
        another row stride (0.9.4: ld became max(stride, cols), past the allocation)."""
        x = torch.randn(1, 8, device="cuda").expand(4, 8)
        torch.testing.assert_close(torch.ops.fusedops.softmax(x, -1), torch.softmax(x, -1))
        y = torch.randn(8, device="cuda").expand(4, 3, 8)
        torch.testing.assert_close(torch.ops.fusedops.log_softmax(y, -1), torch.log_softmax(y, -1))
        z = torch.randn(64, device="cuda").as_strided((5, 16), (4, 1))  # overlapping rows
        torch.testing.assert_close(torch.ops.fusedops.softmax(z, -1), torch.softmax(z, -1))
        r = torch.randn(1, 8, device="cuda").expand(4, 8)  # an expanded residual
        x2 = torch.randn(4, 8, device="cuda")
        got = torch.ops.fusedops.residual_dropout(x2, r, None, 0.0, 1, 0)
        torch.testing.assert_close(got, x2 + r)

    def test_dim_out_of_range(self):
        x = torch.randn(4, 8, device="cuda")
        for dim in (2, -3):
            with self.assertRaises(IndexError):
                torch.ops.fusedops.softmax(x, dim)
            with self.assertRaises(IndexError):
                torch.softmax(x, dim)  # (as torch)

    def test_opcheck(self):
        x = torch.randn(16, 1024, device="cuda", dtype=torch.bfloat16)
        torch.library.opcheck(torch.ops.fusedops.softmax.default, (x, -1))
        torch.library.opcheck(torch.ops.fusedops.log_softmax.default, (x, -1))
        # another dim: the output is computed with dim last and moved back (not contiguous),
        # and the fake gives that layout too
        y = torch.randn(4, 8, 16, device="cuda")
        torch.library.opcheck(torch.ops.fusedops.softmax.default, (y, 0))
        torch.library.opcheck(torch.ops.fusedops.log_softmax.default, (y, 1))

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
        """Per-call cost of the torch op over a direct C call (recorded, not asserted): the op
        (torch.ops.fusedops.softmax, a define/impl op whose Autograd kernel runs the
        implementation itself for plain CUDA tensors), that implementation called as a Python
        function, and tile_softmax through ctypes as library() declares it."""
        import fusedops._lib as lib
        import fusedops.torch as ft
        x = torch.randn(4, 64, device="cuda")
        y = torch.empty_like(x)
        c = lib.library()
        stream = torch.cuda.current_stream().cuda_stream
        n = 1000

        def per_call(f):
            for _ in range(100):
                f()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            torch.cuda.synchronize()
            return 1e6 * (time.perf_counter() - t0) / n

        # Seven rounds, the three paths interleaved in each, so a slow spell of the host weighs
        # on all of them alike; the figures are the medians over the rounds (and the minima).
        paths = {"op": lambda: torch.ops.fusedops.softmax(x, -1),
                 "impl": lambda: ft._softmax_op_impl(x, -1),
                 "direct": lambda: c.tile_softmax(0, y.data_ptr(), x.data_ptr(), 4, 64, 64, 64,
                                                  stream)}
        rounds = {k: [] for k in paths}
        for _ in range(7):
            for k, f in paths.items():
                rounds[k].append(per_call(f))
        med = {k: sorted(v)[len(v) // 2] for k, v in rounds.items()}
        low = {k: min(v) for k, v in rounds.items()}
        print(f"\nper call (median of 7 rounds): torch op {med['op']:.1f} us, python impl "
              f"{med['impl']:.1f} us, direct C {med['direct']:.1f} us; op over direct C "
              f"{med['op'] - med['direct']:.1f} us (minima: {low['op']:.1f}, {low['impl']:.1f}, "
              f"{low['direct']:.1f}; op over direct C {low['op'] - low['direct']:.1f} us)")

    def test_fast_path_taken(self):
        """The Autograd kernel's fast path is taken for a plain CUDA call: the key set it gets
        is ft._PLAIN_CUDA (checked on a probe op registered as the ops are), so the measured
        overhead is the fast path's; and a TorchDispatchMode still sees the real op (the
        kernel redispatches then) with the same result."""
        import fusedops.torch as ft
        from torch.utils._python_dispatch import TorchDispatchMode
        below = []

        def impl(x, dim=-1):
            below.append(torch._C._dispatch_tls_local_exclude_set().has(
                torch._C.DispatchKey.AutogradFunctionality))
            return x.clone()
        if not hasattr(type(self), "probe_lib"):
            type(self).probe_lib = torch.library.Library("fusedops_probe", "DEF")
            ft._register("probe", "(Tensor x, SymInt dim=-1) -> Tensor", impl, ft._empty_out,
                         fast_kernel=ft._softmax_kernel, lib=type(self).probe_lib)
        x = torch.randn(4, 64, device="cuda")
        torch.ops.fusedops_probe.probe(x, -1)
        self.assertEqual(below, [False], "plain CUDA call: not run in the Autograd kernel")

        class Record(TorchDispatchMode):
            def __init__(self):
                super().__init__()
                self.ops = []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                self.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        want = torch.ops.fusedops.softmax(x, -1)
        with Record() as mode:
            got = torch.ops.fusedops.softmax(x, -1)
        self.assertIn("fusedops.softmax.default", mode.ops)
        torch.testing.assert_close(got, want)


@unittest.skipUnless(HAVE_GPU, REASON)
class NormOpsTest(unittest.TestCase):
    """layer_norm, rms_norm, residual_dropout, residual_dropout_norm."""
    SHAPES = [(1, 1), (3, 17), (97, 781), (8, 4, 1000), (2, 70000)]
    DTYPES = () if torch is None else (torch.float32, torch.float16, torch.bfloat16)

    @classmethod
    def setUpClass(cls):
        import fusedops.torch  # noqa: F401  registers the ops
        cls.F = torch.nn.functional

    def tol(self, dtype):
        # (atol, rtol) against a float64 reference: one rounding of y to dtype (rtol), and the
        # fp32 row statistics where y cancels against a bias (atol).
        return {torch.float32: (1e-4, 2e-5), torch.float16: (2e-3, 2.0 ** -10),
                torch.bfloat16: (1.6e-2, 2.0 ** -7)}[dtype]

    def close(self, got, want):
        atol, rtol = self.tol(got.dtype)
        self.assertFalse(torch.isnan(got).any())
        torch.testing.assert_close(got.double(), want.double(), atol=atol, rtol=rtol)

    def inputs(self, shape, dtype, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)
        cols = shape[-1]

        def u(*size, lo=-1.0, hi=1.0):
            return (torch.rand(size, generator=g, device="cuda") * (hi - lo) + lo).to(dtype)
        return dict(x=u(*shape, lo=-8, hi=8), r=u(*shape, lo=-8, hi=8), b=u(cols),
                    w=u(cols, lo=0.5, hi=1.5), nb=u(cols))

    @staticmethod
    def add_ref(x, b, r, p=0.0):
        """residual + dropout(x + b) with every element kept, in the kernels' fp32 order
        (t = x + b; t = t * scale; t += r), rounded to x's dtype: exact, not approximate."""
        t = x.float() + b.float() if b is not None else x.float()
        if p > 0:
            scale = (1.0 / (1.0 - torch.tensor(p, dtype=torch.float32))).item()  # fp32 value
            t = t * scale
        return (t + r.float()).to(x.dtype)

    def test_layer_norm_matches_torch(self):
        for dtype in self.DTYPES:
            for shape in self.SHAPES:
                t = self.inputs(shape, dtype)
                cols = shape[-1]
                for w, b in ((t["w"], t["nb"]), (t["w"], None), (None, None)):
                    got = torch.ops.fusedops.layer_norm(t["x"], w, b, 1e-5)
                    want = self.F.layer_norm(t["x"].double(), (cols,),
                                             None if w is None else w.double(),
                                             None if b is None else b.double(), 1e-5)
                    self.close(got, want)

    def test_rms_norm_matches_torch(self):
        for dtype in self.DTYPES:
            for shape in self.SHAPES:
                t = self.inputs(shape, dtype)
                cols = shape[-1]
                for w in (t["w"], None):
                    got = torch.ops.fusedops.rms_norm(t["x"], w, 1e-6)
                    want = self.F.rms_norm(t["x"].double(), (cols,),
                                           None if w is None else w.double(), 1e-6)
                    self.close(got, want)

    def test_residual_dropout_p0_is_exact_add(self):
        for dtype in self.DTYPES:
            for shape in self.SHAPES:
                t = self.inputs(shape, dtype)
                for b in (t["b"], None):
                    got = torch.ops.fusedops.residual_dropout(t["x"], t["r"], b, 0.0, 1, 0)
                    self.assertTrue(torch.equal(got, self.add_ref(t["x"], b, t["r"])),
                                    f"{dtype} {shape} bias={b is not None}")

    def test_residual_dropout_keeps_or_drops(self):
        p = 0.1
        for dtype in self.DTYPES:
            t = self.inputs((512, 1000), dtype)
            got = torch.ops.fusedops.residual_dropout(t["x"], t["r"], t["b"], p, 1234, 5)
            kept = got == self.add_ref(t["x"], t["b"], t["r"], p)
            dropped = got == t["r"]
            self.assertTrue(bool((kept | dropped).all()), f"{dtype}: neither kept nor dropped")
            frac = kept.double().mean().item()
            self.assertAlmostEqual(frac, 1 - p, delta=0.01)
            again = torch.ops.fusedops.residual_dropout(t["x"], t["r"], t["b"], p, 1234, 5)
            self.assertTrue(torch.equal(got, again), "same seed and offset, different output")
            other = torch.ops.fusedops.residual_dropout(t["x"], t["r"], t["b"], p, 1234, 6)
            self.assertFalse(torch.equal(got, other), "another offset, the same mask")

    def test_residual_dropout_norm(self):
        for dtype in self.DTYPES:
            for shape in self.SHAPES:
                t = self.inputs(shape, dtype)
                x, r, b, w, nb = t["x"], t["r"], t["b"], t["w"], t["nb"]
                cols = shape[-1]
                for p in (0.0, 0.1):
                    for rms in (False, True):
                        y, s = torch.ops.fusedops.residual_dropout_norm(
                            x, r, b, w, None if rms else nb, p, 1e-5, 99, 3, rms)
                        # s: the same mask as residual_dropout's for the same (seed, offset)
                        s_want = (self.add_ref(x, b, r) if p == 0 else
                                  torch.ops.fusedops.residual_dropout(x, r, b, p, 99, 3))
                        self.assertTrue(torch.equal(s, s_want), f"s: {dtype} {shape} p={p}")
                        # y: the norm of s as stored
                        if rms:
                            want = self.F.rms_norm(s.double(), (cols,), w.double(), 1e-5)
                        else:
                            want = self.F.layer_norm(s.double(), (cols,), w.double(),
                                                     nb.double(), 1e-5)
                        self.close(y, want)

    def test_strided_rows(self):
        # rows with a stride (no copy), and the same through a non-unit column stride (copied)
        x = torch.randn(64, 300, device="cuda")[:, :257]
        r = torch.randn(64, 400, device="cuda")[:, 100:357]
        w = torch.randn(257, device="cuda")
        F = self.F
        self.close(torch.ops.fusedops.layer_norm(x, w, None, 1e-5),
                   F.layer_norm(x.double(), (257,), w.double(), None, 1e-5))
        self.close(torch.ops.fusedops.rms_norm(x.t().contiguous().t(), w, 1e-6),
                   F.rms_norm(x.double(), (257,), w.double(), 1e-6))
        got = torch.ops.fusedops.residual_dropout(x, r, None, 0.0, 0, 0)
        self.assertTrue(torch.equal(got, self.add_ref(x, None, r)))
        y, s = torch.ops.fusedops.residual_dropout_norm(x, r, None, w, None, 0.0, 1e-5, 0, 0)
        self.assertTrue(torch.equal(s, self.add_ref(x, None, r)))
        self.close(y, F.layer_norm(s.double(), (257,), w.double(), None, 1e-5))

    def test_opcheck(self):
        t = self.inputs((16, 1024), torch.bfloat16)
        x, r, b, w, nb = t["x"], t["r"], t["b"], t["w"], t["nb"]
        ops = torch.ops.fusedops
        torch.library.opcheck(ops.layer_norm.default, (x, w, nb, 1e-5))
        torch.library.opcheck(ops.layer_norm.default, (x, None, None, 1e-5))
        torch.library.opcheck(ops.rms_norm.default, (x, w, 1e-6))
        torch.library.opcheck(ops.residual_dropout.default, (x, r, b, 0.1, 1, 2))
        torch.library.opcheck(ops.residual_dropout_norm.default,
                              (x, r, b, w, nb, 0.1, 1e-5, 1, 2, False))
        torch.library.opcheck(ops.residual_dropout_norm.default,
                              (x, r, None, w, None, 0.0, 1e-5, 1, 2, True))

    def test_errors(self):
        ops = torch.ops.fusedops
        x = torch.randn(4, 8, device="cuda")
        with self.assertRaisesRegex(ValueError, "CUDA tensor"):
            ops.layer_norm(torch.randn(4, 8), None, None, 1e-5)
        with self.assertRaisesRegex(TypeError, "dtype"):
            ops.rms_norm(x, torch.ones(8, device="cuda", dtype=torch.bfloat16), 1e-6)
        with self.assertRaisesRegex(ValueError, "shape"):
            ops.layer_norm(x, torch.ones(7, device="cuda"), None, 1e-5)
        with self.assertRaisesRegex(ValueError, "shape"):
            ops.residual_dropout(x, torch.randn(4, 9, device="cuda"), None, 0.0, 0, 0)
        with self.assertRaisesRegex(ValueError, "norm_bias"):
            ops.residual_dropout_norm(x, x, None, None, torch.ones(8, device="cuda"), 0.0, 1e-5,
                                      0, 0, True)
        # the library's own validation, its message in the exception
        with self.assertRaisesRegex(RuntimeError, "invalid argument"):
            ops.residual_dropout(x, x, None, 1.0, 0, 0)
        with self.assertRaisesRegex(RuntimeError, "invalid argument"):
            ops.layer_norm(x, None, None, -1.0)
        xg = torch.randn(4, 8, device="cuda", requires_grad=True)
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            ops.layer_norm(xg, None, None, 1e-5).sum().backward()
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            y, s = ops.residual_dropout_norm(xg, x, None, None, None, 0.1, 1e-5, 0, 0)
            (y.sum() + s.sum()).backward()

    def test_compile_fullgraph_and_cuda_graph(self):
        ops = torch.ops.fusedops

        def block(x, r, b, w, nb):
            y, s = ops.residual_dropout_norm(x, r, b, w, nb, 0.1, 1e-5, 42, 7)
            h = ops.layer_norm(y * 2.0, w, nb, 1e-5)
            h = ops.rms_norm(h, w, 1e-6)
            return ops.residual_dropout(h, s, b, 0.1, 42, 8)

        t = self.inputs((256, 1024), torch.bfloat16)
        args = (t["x"], t["r"], t["b"], t["w"], t["nb"])
        eager = block(*args)
        compiled = torch.compile(block, fullgraph=True)(*args)
        torch.testing.assert_close(compiled, eager)
        static_x = t["x"].clone()
        g = torch.cuda.CUDAGraph()
        block(static_x, *args[1:])  # warm-up outside the capture
        with torch.cuda.graph(g):
            static_out = block(static_x, *args[1:])
        static_x.copy_(torch.randn_like(static_x))
        g.replay()
        torch.testing.assert_close(static_out, block(static_x, *args[1:]))


@unittest.skipUnless(HAVE_GPU, REASON)
class AttentionOpsTest(unittest.TestCase):
    """flash_attention and flash_attention_lse: [b, s, h, d] (BSHD) inputs."""
    DTYPES = () if torch is None else (torch.float16, torch.bfloat16)

    @classmethod
    def setUpClass(cls):
        import fusedops.torch  # noqa: F401  registers the ops
        cls.F = torch.nn.functional

    @staticmethod
    def tol(dtype):
        # (atol, rtol) of o against a reference on the same (rounded) inputs: the kernel rounds
        # the probabilities to the storage dtype before the P V product and o once at the end.
        return {torch.float16: (3e-3, 2e-3), torch.bfloat16: (2e-2, 1.6e-2)}[dtype]

    def qkv(self, b, s_q, s_k, h_q, h_kv, d, dtype, seed=0):
        g = torch.Generator(device="cuda").manual_seed(seed)

        def randn(*shape):
            return torch.randn(shape, generator=g, device="cuda").to(dtype)
        return randn(b, s_q, h_q, d), randn(b, s_k, h_kv, d), randn(b, s_k, h_kv, d)

    @staticmethod
    def reference(q, k, v, causal, scale=None):
        """(o, lse) in float64 from BSHD inputs: GQA by repeating k/v heads, the causal mask
        bottom-right aligned, a query that sees no key gives o = 0 and lse = -inf."""
        q, k, v = (t.double().transpose(1, 2) for t in (q, k, v))  # [b, h, s, d]
        group = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(group, 1), v.repeat_interleave(group, 1)
        s_q, s_k, d = q.shape[2], k.shape[2], q.shape[3]
        scores = (q @ k.transpose(-1, -2)) * (scale if scale is not None else d ** -0.5)
        if causal:
            i = torch.arange(s_q, device=q.device)[:, None]
            j = torch.arange(s_k, device=q.device)[None, :]
            scores = scores.masked_fill(j > i + s_k - s_q, float("-inf"))
        lse = torch.logsumexp(scores, -1)  # -inf where every key is masked
        p = torch.exp(scores - torch.where(lse.isinf(), 0.0, lse)[..., None])
        return (p @ v).transpose(1, 2), lse

    def close(self, got, want):
        atol, rtol = self.tol(got.dtype)
        self.assertFalse(torch.isnan(got).any(), "NaN in the output")
        torch.testing.assert_close(got.double(), want.double(), atol=atol, rtol=rtol)

    def test_matches_sdpa(self):
        """Against F.scaled_dot_product_attention on float32 upcasts of the same inputs (seqlen_q
        == seqlen_k, so its top-left causal mask is ours too), GQA through enable_gqa."""
        for dtype in self.DTYPES:
            for b, s, h_q, h_kv, d in [(2, 128, 4, 4, 64), (1, 77, 8, 2, 128), (3, 200, 6, 1, 32),
                                       (1, 33, 2, 2, 256), (2, 64, 4, 4, 40)]:
                q, k, v = self.qkv(b, s, s, h_q, h_kv, d, dtype)
                for causal in (False, True):
                    got = torch.ops.fusedops.flash_attention(q, k, v, causal)
                    self.assertEqual(got.shape, q.shape)
                    self.assertTrue(got.is_contiguous())
                    want = self.F.scaled_dot_product_attention(
                        q.float().transpose(1, 2), k.float().transpose(1, 2),
                        v.float().transpose(1, 2), is_causal=causal,
                        enable_gqa=h_q != h_kv).transpose(1, 2)
                    with self.subTest(dtype=dtype, shape=(b, s, h_q, h_kv, d), causal=causal):
                        self.close(got, want)

    def test_lse_and_bottom_right_causal(self):
        """seqlen_q != seqlen_k (the mask aligned bottom-right; with seqlen_q > seqlen_k the
        first queries see no key), a given scale, and the log-sum-exp, against float64."""
        for dtype in self.DTYPES:
            for b, s_q, s_k, h_q, h_kv, d in [(2, 50, 130, 4, 2, 64), (1, 130, 50, 4, 4, 128),
                                              (2, 1, 300, 2, 1, 64)]:
                q, k, v = self.qkv(b, s_q, s_k, h_q, h_kv, d, dtype, seed=1)
                for causal in (False, True):
                    o, lse = torch.ops.fusedops.flash_attention_lse(q, k, v, causal, 0.1)
                    o_want, lse_want = self.reference(q, k, v, causal, 0.1)
                    with self.subTest(dtype=dtype, shape=(b, s_q, s_k, h_q, h_kv, d),
                                      causal=causal):
                        self.close(o, o_want)
                        self.assertEqual(lse.shape, (b, h_q, s_q))
                        self.assertEqual(lse.dtype, torch.float32)
                        seen = ~lse_want.isinf()
                        self.assertTrue(torch.equal(lse.isinf(), ~seen), "-inf rows differ")
                        self.assertTrue(bool((lse[~seen] < 0).all()), "unseen rows: lse not -inf")
                        torch.testing.assert_close(lse[seen].double(), lse_want[seen],
                                                   atol=2e-3, rtol=1e-4)
                        o_only = torch.ops.fusedops.flash_attention(q, k, v, causal, 0.1)
                        self.assertTrue(torch.equal(o_only, o), "o differs with and without lse")

    def test_decode_key_splits(self):
        """Decode calls (one or a few queries a head against thousands of keys) split their keys
        over programs in the op's workspace, which grows to what the call can use
        (tile_flash_attention_workspace_size); o and lse against float64, then the same call
        replayed from a CUDA graph (its own workspace, zeroed in the capture)."""
        ops = torch.ops.fusedops
        for dtype in self.DTYPES:
            for b, s_q, s_k, h_q, h_kv, d, causal in [(1, 1, 8192, 32, 8, 128, False),
                                                      (2, 1, 3000, 16, 16, 64, True),
                                                      (1, 3, 5000, 4, 4, 128, True)]:
                q, k, v = self.qkv(b, s_q, s_k, h_q, h_kv, d, dtype, seed=2)
                o, lse = ops.flash_attention_lse(q, k, v, causal)
                o_want, lse_want = self.reference(q, k, v, causal)
                with self.subTest(dtype=dtype, shape=(b, s_q, s_k, h_q, h_kv, d), causal=causal):
                    self.close(o, o_want)
                    torch.testing.assert_close(lse.double(), lse_want, atol=2e-3, rtol=1e-4)
                    out = torch.empty_like(o)
                    graph = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(graph):
                        out.copy_(ops.flash_attention(q, k, v, causal))
                    for _ in range(2):
                        out.zero_()
                        graph.replay()
                        torch.cuda.synchronize()
                        self.close(out, o_want)

    def test_strided_inputs(self):
        """Views the library reads in place (slices of a packed qkv, BHSD transposed) and a
        misaligned one it gets a copy of: the same results as contiguous inputs."""
        dtype, (b, s, h, d) = torch.bfloat16, (2, 96, 4, 64)
        qkv = torch.randn(b, s, 3, h, d, device="cuda").to(dtype)
        q, k, v = qkv[:, :, 0], qkv[:, :, 1], qkv[:, :, 2]
        want, _ = self.reference(q, k, v, True)
        ops = torch.ops.fusedops
        self.close(ops.flash_attention(q, k, v, True), want)
        bhsd = [t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k, v)]
        self.assertEqual(bhsd[0].stride(), (h * s * d, d, s * d, 1))
        self.close(ops.flash_attention(*bhsd, True), want)
        flat = torch.empty(q.numel() + 1, device="cuda", dtype=dtype)
        odd = flat[1:].view(q.shape)  # 2 bytes past an aligned address
        odd.copy_(q)
        self.assertNotEqual(odd.data_ptr() % 16, 0)
        self.close(ops.flash_attention(odd, k, v, True), want)

    def test_opcheck(self):
        q, k, v = self.qkv(2, 64, 64, 4, 2, 64, torch.bfloat16)
        ops = torch.ops.fusedops
        torch.library.opcheck(ops.flash_attention.default, (q, k, v, False, None))
        torch.library.opcheck(ops.flash_attention.default, (q, k, v, True, 0.2))
        torch.library.opcheck(ops.flash_attention_lse.default, (q, k, v, True, None))

    def test_errors(self):
        ops = torch.ops.fusedops
        q, k, v = self.qkv(1, 16, 16, 4, 2, 64, torch.bfloat16)
        with self.assertRaisesRegex(ValueError, "CUDA tensor"):
            ops.flash_attention(q.cpu(), k.cpu(), v.cpu())
        with self.assertRaisesRegex(TypeError, "not supported"):
            ops.flash_attention(q.float(), k.float(), v.float())
        with self.assertRaisesRegex(TypeError, "one dtype"):
            ops.flash_attention(q, k.half(), v.half())
        with self.assertRaisesRegex(ValueError, "4-D"):
            ops.flash_attention(q[0], k[0], v[0])
        with self.assertRaisesRegex(ValueError, "one shape"):
            ops.flash_attention(q, k, v[:, :8])
        with self.assertRaisesRegex(ValueError, "head_dim"):
            ops.flash_attention(q, k[..., :32], v[..., :32])
        with self.assertRaisesRegex(ValueError, "batch"):
            ops.flash_attention(q, torch.cat([k, k]), torch.cat([v, v]))
        with self.assertRaisesRegex(ValueError, "multiple"):
            ops.flash_attention(q[:, :, :3], k, v)
        with self.assertRaisesRegex(ValueError, "scale"):
            ops.flash_attention(q, k, v, False, 0.0)
        # the library's own validation, its message in the exception: head_dim not a multiple
        # of 8
        with self.assertRaisesRegex(RuntimeError, "not supported.*head_dim"):
            ops.flash_attention(q[..., :36], k[..., :36], v[..., :36])
        qg = q.detach().clone().requires_grad_(True)
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            ops.flash_attention(qg, k, v).sum().backward()
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            o, lse = ops.flash_attention_lse(qg, k, v)
            o.sum().backward()

    def varlen_inputs(self, lens_q, lens_k, h_q, h_kv, d, dtype, seed=0):
        """Packed q [total_q, h_q, d], k and v [total_k, h_kv, d] and their int32 offsets."""
        g = torch.Generator(device="cuda").manual_seed(seed)

        def randn(*shape):
            return torch.randn(shape, generator=g, device="cuda").to(dtype)

        def offsets(lens):
            return torch.tensor([0] + lens, device="cuda").cumsum(0).to(torch.int32)
        q, k, v = randn(sum(lens_q), h_q, d), randn(sum(lens_k), h_kv, d), randn(sum(lens_k), h_kv, d)
        return q, k, v, offsets(lens_q), offsets(lens_k)

    def check_varlen(self, o, q, k, v, cu_q, cu_k, causal, scale=None, skip=()):
        """Each sequence of o against the float64 reference of its own slices."""
        bq, bk = cu_q.tolist(), cu_k.tolist()
        for b in range(len(bq) - 1):
            if b in skip or bq[b + 1] == bq[b]:
                continue
            sl_q, sl_k = slice(bq[b], bq[b + 1]), slice(bk[b], bk[b + 1])
            if bk[b + 1] == bk[b]:  # no key: o = 0
                self.assertTrue(bool((o[sl_q] == 0).all()), f"sequence {b} sees no key")
                continue
            want, _ = self.reference(q[None, sl_q], k[None, sl_k], v[None, sl_k], causal, scale)
            with self.subTest(sequence=b):
                self.close(o[sl_q], want[0])

    def test_varlen(self):
        """Packed sequences of their own lengths (some empty, one of one token, keys longer
        and shorter than queries), GQA, causal or not: each sequence as if alone."""
        lens_q, lens_k = [0, 1, 77, 300, 130, 5], [5, 1, 77, 513, 0, 200]
        for dtype in self.DTYPES:
            for h_q, h_kv, d in [(4, 2, 64), (8, 8, 128), (4, 1, 96)]:
                q, k, v, cu_q, cu_k = self.varlen_inputs(lens_q, lens_k, h_q, h_kv, d, dtype, 2)
                for causal in (False, True):
                    o = torch.ops.fusedops.flash_attention_varlen(
                        q, k, v, cu_q, cu_k, max(lens_q), max(lens_k), causal)
                    self.assertEqual(o.shape, q.shape)
                    with self.subTest(dtype=dtype, heads=(h_q, h_kv), d=d, causal=causal):
                        self.check_varlen(o, q, k, v, cu_q, cu_k, causal)

    def test_varlen_empty(self):
        """No query at all, or no key in any sequence: an empty output, or zeros (the library
        takes no NULL q or k, so the op answers these itself)."""
        h, d = 4, 64
        cu = torch.zeros(3, device="cuda", dtype=torch.int32)
        q0 = torch.randn(0, h, d, device="cuda", dtype=torch.bfloat16)
        k = torch.randn(10, h, d, device="cuda", dtype=torch.bfloat16)
        cu_k = torch.tensor([0, 4, 10], device="cuda", dtype=torch.int32)
        o = torch.ops.fusedops.flash_attention_varlen(q0, k, k, cu, cu_k, 0, 6)
        self.assertEqual(o.shape, (0, h, d))
        q = torch.randn(7, h, d, device="cuda", dtype=torch.bfloat16)
        cu_q = torch.tensor([0, 3, 7], device="cuda", dtype=torch.int32)
        k0 = torch.randn(0, h, d, device="cuda", dtype=torch.bfloat16)
        for causal in (False, True):
            o = torch.ops.fusedops.flash_attention_varlen(q, k0, k0, cu_q, cu, 4, 0, causal)
            self.assertEqual(o.shape, q.shape)
            self.assertTrue(torch.equal(o, torch.zeros_like(q)))

    def test_varlen_isolation(self):
        """A sequence whose keys and values are all +Inf leaves the others exact (a key tile
        that runs past a sequence's end reads none of the next one's tokens)."""
        lens = [70, 200, 33, 129]
        q, k, v, cu_q, cu_k = self.varlen_inputs(lens, lens, 4, 4, 64, torch.bfloat16, 4)
        bad = slice(cu_k[1].item(), cu_k[2].item())
        k[bad] = float("inf")
        v[bad] = float("inf")
        for causal in (False, True):
            o = torch.ops.fusedops.flash_attention_varlen(q, k, v, cu_q, cu_k, 200, 200, causal)
            self.check_varlen(o, q, k, v, cu_q, cu_k, causal, skip=(1,))

    def test_varlen_equals_dense(self):
        """Sequences of one length packed: the same output as the dense call."""
        q, k, v = self.qkv(3, 257, 257, 8, 2, 128, torch.bfloat16, seed=5)
        cu = torch.arange(0, 4 * 257, 257, device="cuda", dtype=torch.int32)
        dense = torch.ops.fusedops.flash_attention(q, k, v, True)
        packed = torch.ops.fusedops.flash_attention_varlen(
            q.flatten(0, 1), k.flatten(0, 1), v.flatten(0, 1), cu, cu, 257, 257, True)
        torch.testing.assert_close(packed.view(q.shape), dense, atol=0, rtol=0)

    def test_varlen_opcheck_errors_and_graph(self):
        ops = torch.ops.fusedops
        q, k, v, cu_q, cu_k = self.varlen_inputs([64, 1, 100], [64, 9, 100], 4, 2, 64,
                                                 torch.bfloat16, 6)
        torch.library.opcheck(ops.flash_attention_varlen.default, (q, k, v, cu_q, cu_k, 100, 100,
                                                                    True, None))
        with self.assertRaisesRegex(ValueError, "3-D"):
            ops.flash_attention_varlen(q[None], k, v, cu_q, cu_k, 100, 100)
        with self.assertRaisesRegex(ValueError, "int32"):
            ops.flash_attention_varlen(q, k, v, cu_q.long(), cu_k, 100, 100)
        with self.assertRaisesRegex(ValueError, "one batch"):
            ops.flash_attention_varlen(q, k, v, cu_q[:-1], cu_k, 100, 100)
        with self.assertRaisesRegex(ValueError, "max_seqlen_q"):
            ops.flash_attention_varlen(q, k, v, cu_q, cu_k, -1, 100)
        eager = ops.flash_attention_varlen(q, k, v, cu_q, cu_k, 100, 100, True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = ops.flash_attention_varlen(q, k, v, cu_q, cu_k, 100, 100, True)
        q.copy_(torch.randn_like(q))
        graph.replay()
        torch.testing.assert_close(static_out,
                                   ops.flash_attention_varlen(q, k, v, cu_q, cu_k, 100, 100, True))
        self.assertFalse(torch.equal(static_out, eager))

    def test_compile_fullgraph_and_cuda_graph(self):
        ops = torch.ops.fusedops

        def block(x, wq, wk, wv):
            b, s, _ = x.shape
            q = (x @ wq).view(b, s, 8, 64)
            k = (x @ wk).view(b, s, 2, 64)
            v = (x @ wv).view(b, s, 2, 64)
            o = ops.flash_attention(q, k, v, True)
            o2, lse = ops.flash_attention_lse(q, k, v, False, 0.125)
            return o.reshape(b, s, -1) + o2.reshape(b, s, -1), lse

        g = torch.Generator(device="cuda").manual_seed(3)
        x = torch.randn(2, 128, 256, device="cuda", generator=g).bfloat16()
        ws = [(torch.randn(256, n, device="cuda", generator=g) / 16).bfloat16()
              for n in (512, 128, 128)]
        eager = block(x, *ws)
        compiled = torch.compile(block, fullgraph=True)(x, *ws)
        torch.testing.assert_close(compiled, eager)
        static_x = x.clone()
        graph = torch.cuda.CUDAGraph()
        block(static_x, *ws)  # warm-up outside the capture
        with torch.cuda.graph(graph):
            static_out = block(static_x, *ws)
        static_x.copy_(torch.randn_like(static_x))
        graph.replay()
        torch.testing.assert_close(static_out, block(static_x, *ws))


@unittest.skipUnless(HAVE_GPU, REASON)
class GroupedMatmulOpsTest(unittest.TestCase):
    """grouped_mm: a [total_m, K], b [groups, K, N] in either layout, offs int32 [groups]."""
    DTYPES = () if torch is None else (torch.float16, torch.bfloat16)

    @classmethod
    def setUpClass(cls):
        import fusedops.torch  # noqa: F401  registers the ops

    @staticmethod
    def tol(dtype):
        # (atol, rtol) of C (entries of standard deviation about 1) against float64 on the same
        # rounded inputs: the fp32 sums' rounding to the dtype, and some of fp32 accumulation.
        return {torch.float16: (3e-3, 2e-3), torch.bfloat16: (2e-2, 1.6e-2)}[dtype]

    def inputs(self, sizes, k, n, dtype, nk=False, bias=False, tail=0, seed=0):
        """(a, b, offs, bias) for groups of `sizes` rows (and `tail` rows in no group): a
        standard normal, b scaled by 1 / sqrt(K) so C has entries of about unit size; b
        [groups, K, N] contiguous, or with nk the transpose of a contiguous [groups, N, K]."""
        g = torch.Generator(device="cuda").manual_seed(seed)
        groups, total_m = len(sizes), sum(sizes) + tail

        def randn(*shape, scale=1.0):
            return (torch.randn(shape, generator=g, device="cuda") * scale).to(dtype)
        a = randn(total_m, k)
        if nk:
            b = randn(groups, n, k, scale=k ** -0.5).transpose(1, 2)
        else:
            b = randn(groups, k, n, scale=k ** -0.5)
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        return a, b, offs, randn(groups, n) if bias else None

    @staticmethod
    def reference(a, b, offs, bias=None):
        """A loop of torch.mm over the groups, in float64: rows past the last end are 0."""
        c = torch.zeros(a.shape[0], b.shape[2], dtype=torch.float64, device=a.device)
        start = 0
        for g, end in enumerate(offs.tolist()):
            c[start:end] = a[start:end].double() @ b[g].double()
            if bias is not None:
                c[start:end] += bias[g].double()
            start = end
        return c

    def close(self, got, want, rows=None):
        atol, rtol = self.tol(got.dtype)
        got, want = (got, want) if rows is None else (got[:rows], want[:rows])
        self.assertFalse(torch.isnan(got).any(), "NaN in the output")
        torch.testing.assert_close(got.double(), want, atol=atol, rtol=rtol)

    def test_matches_loop_of_mm(self):
        """Both B layouts, with and without bias, empty groups, one group, groups of one row."""
        cases = [([37, 0, 64, 1, 90, 15, 60, 33], 256, 192), ([300], 128, 64),
                 ([1] * 16, 64, 72), ([0, 200, 0], 200, 136)]
        for dtype in self.DTYPES:
            for sizes, k, n in cases:
                for nk in (False, True):
                    for bias in (False, True):
                        a, b, offs, bi = self.inputs(sizes, k, n, dtype, nk, bias)
                        self.assertEqual(b.stride(1) == 1, nk)
                        got = torch.ops.fusedops.grouped_mm(a, b, offs, bi)
                        with self.subTest(dtype=dtype, sizes=sizes, k=k, n=n, nk=nk, bias=bias):
                            self.assertEqual(got.shape, (a.shape[0], n))
                            self.assertEqual(got.dtype, dtype)
                            self.close(got, self.reference(a, b, offs, bi))

    def test_ragged_k_n_and_copies(self):
        """K and N not multiples of 8 (inputs copied into padded rows, C's rows padded as
        torch._grouped_mm pads them), a misaligned a, and rows past the last end (not
        compared: they are never written)."""
        dtype = torch.bfloat16
        for k, n in [(100, 50), (8, 8), (13, 1)]:
            a, b, offs, bias = self.inputs([20, 0, 33, 7], k, n, dtype, bias=True, tail=5, seed=1)
            got = torch.ops.fusedops.grouped_mm(a, b, offs, bias)
            self.assertEqual(got.stride(), ((n + 7) // 8 * 8, 1))
            self.close(got, self.reference(a, b, offs, bias), rows=60)
        a, b, offs, _ = self.inputs([30, 34], 64, 64, dtype, seed=2)
        flat = torch.empty(a.numel() + 1, device="cuda", dtype=dtype)
        odd = flat[1:].view(a.shape)  # 2 bytes past an aligned address
        odd.copy_(a)
        self.assertNotEqual(odd.data_ptr() % 16, 0)
        self.close(torch.ops.fusedops.grouped_mm(odd, b, offs), self.reference(a, b, offs))
        shared = b[:1].expand(2, -1, -1)  # every group the same B (stride 0): copied
        self.close(torch.ops.fusedops.grouped_mm(a, shared, offs),
                   self.reference(a, shared, offs))

    def test_matches_torch_grouped_mm(self):
        """Against torch._grouped_mm where this PyTorch and GPU have it (bf16, no bias)."""
        if not hasattr(torch, "_grouped_mm"):
            self.skipTest("torch._grouped_mm is not in this PyTorch")
        a, b, offs, _ = self.inputs([128, 0, 64, 320, 16], 256, 512, torch.bfloat16, nk=True)
        try:
            want = torch._grouped_mm(a, b, offs=offs)
        except RuntimeError as e:
            self.skipTest(f"torch._grouped_mm: {str(e).splitlines()[0]}")
        got = torch.ops.fusedops.grouped_mm(a, b, offs)
        torch.testing.assert_close(got, want, atol=2e-2, rtol=1.6e-2)

    def test_total_m_zero(self):
        a, b, offs, _ = self.inputs([0, 0], 64, 64, torch.float16)
        got = torch.ops.fusedops.grouped_mm(a, b, offs)
        self.assertEqual(got.shape, (0, 64))

    def test_opcheck(self):
        ops = torch.ops.fusedops
        for n, bias in ((128, False), (50, True)):
            a, b, offs, bi = self.inputs([40, 0, 24], 64, n, torch.bfloat16, nk=n == 50,
                                         bias=bias)
            torch.library.opcheck(ops.grouped_mm.default, (a, b, offs, bi))

    def test_errors(self):
        ops = torch.ops.fusedops
        a, b, offs, bias = self.inputs([8, 8], 64, 32, torch.bfloat16, bias=True)
        with self.assertRaisesRegex(ValueError, "CUDA tensor"):
            ops.grouped_mm(a.cpu(), b.cpu(), offs.cpu())
        with self.assertRaisesRegex(TypeError, "not supported"):
            ops.grouped_mm(a.float(), b.float(), offs)
        with self.assertRaisesRegex(TypeError, "one dtype"):
            ops.grouped_mm(a, b.half(), offs)
        with self.assertRaisesRegex(TypeError, "int32"):
            ops.grouped_mm(a, b, offs.long())
        with self.assertRaisesRegex(ValueError, "2-D"):
            ops.grouped_mm(a[None], b, offs)
        with self.assertRaisesRegex(ValueError, "3-D"):
            ops.grouped_mm(a, b[0], offs)
        with self.assertRaisesRegex(ValueError, "K"):
            ops.grouped_mm(a[:, :32], b, offs)
        with self.assertRaisesRegex(ValueError, "offs"):
            ops.grouped_mm(a, b, offs[:1])
        with self.assertRaisesRegex(ValueError, "bias"):
            ops.grouped_mm(a, b, offs, bias[:, :16])
        # the library's own validation, its message in the exception: more than 65536 groups
        many = torch.zeros(65537, 8, 8, device="cuda", dtype=torch.bfloat16)
        with self.assertRaisesRegex(RuntimeError, "groups"):
            ops.grouped_mm(a[:, :8], many, torch.full((65537,), 16, device="cuda",
                                                      dtype=torch.int32))
        ag = a.detach().clone().requires_grad_(True)
        with self.assertRaisesRegex(NotImplementedError, "no backward"):
            ops.grouped_mm(ag, b, offs).sum().backward()

    def test_compile_fullgraph_and_cuda_graph(self):
        ops = torch.ops.fusedops

        def moe(x, w_up, w_down, offs):
            h = torch.nn.functional.silu(ops.grouped_mm(x, w_up, offs))
            return ops.grouped_mm(h, w_down, offs)

        dtype, (groups, d, f) = torch.bfloat16, (4, 256, 512)
        g = torch.Generator(device="cuda").manual_seed(5)
        x = torch.randn(300, d, device="cuda", generator=g).to(dtype)
        w_up = (torch.randn(groups, f, d, device="cuda", generator=g) / 16).to(dtype)
        w_down = (torch.randn(groups, d, f, device="cuda", generator=g) / 16).to(dtype)
        ws = (w_up.transpose(1, 2), w_down.transpose(1, 2))  # nn.Linear weights, seen as [K, N]
        offs = torch.tensor([100, 100, 250, 300], device="cuda", dtype=torch.int32)
        eager = moe(x, *ws, offs)
        compiled = torch.compile(moe, fullgraph=True)(x, *ws, offs)
        torch.testing.assert_close(compiled, eager)
        static_x = x.clone()
        graph = torch.cuda.CUDAGraph()
        moe(static_x, *ws, offs)  # warm-up outside the capture
        with torch.cuda.graph(graph):
            static_out = moe(static_x, *ws, offs)
        static_x.copy_(torch.randn_like(static_x))
        graph.replay()
        torch.testing.assert_close(static_out, moe(static_x, *ws, offs))


@unittest.skipUnless(torch is not None, "PyTorch is not installed")
class RegistrationTest(unittest.TestCase):
    """What runs without a GPU (and without the library): the schemas custom_op inferred
    before the ops moved to define/impl, the errors for CPU tensors, the fake and meta paths
    (torch.compile fullgraph, opcheck), backward's error, and the Autograd kernel's paths on a
    CPU analog registered as the ops are.

    Run: PYTHONPATH=python python3 -m unittest tests.python.test_torch_ops.RegistrationTest
    (or the file: the GPU classes skip)."""
    SCHEMAS = [
        "fusedops::softmax(Tensor x, SymInt dim=-1) -> Tensor",
        "fusedops::log_softmax(Tensor x, SymInt dim=-1) -> Tensor",
        "fusedops::layer_norm(Tensor x, Tensor? weight=None, Tensor? bias=None, "
        "float eps=1.0000000000000001e-05) -> Tensor",
        "fusedops::rms_norm(Tensor x, Tensor? weight=None, float eps=9.9999999999999995e-07) "
        "-> Tensor",
        "fusedops::residual_dropout(Tensor x, Tensor residual, Tensor? bias, float p, "
        "SymInt seed, SymInt offset) -> Tensor",
        "fusedops::residual_dropout_norm(Tensor x, Tensor residual, Tensor? bias, "
        "Tensor? weight, Tensor? norm_bias, float p, float eps, SymInt seed, SymInt offset, "
        "bool rms=False) -> (Tensor, Tensor)",
        "fusedops::flash_attention(Tensor q, Tensor k, Tensor v, bool causal=False, "
        "float? scale=None) -> Tensor",
        "fusedops::flash_attention_lse(Tensor q, Tensor k, Tensor v, bool causal=False, "
        "float? scale=None) -> (Tensor, Tensor)",
        "fusedops::flash_attention_varlen(Tensor q, Tensor k, Tensor v, Tensor cu_seqlens_q, "
        "Tensor cu_seqlens_k, SymInt max_seqlen_q, SymInt max_seqlen_k, bool causal=False, "
        "float? scale=None) -> Tensor",
        "fusedops::grouped_mm(Tensor a, Tensor b, Tensor offs, Tensor? bias=None) -> Tensor",
    ]

    @classmethod
    def setUpClass(cls):
        import fusedops.torch as ft
        cls.ft = ft
        cls.below = []

        def impl(x, dim=-1):
            cls.below.append(torch._C._dispatch_tls_local_exclude_set().has(
                torch._C.DispatchKey.AutogradFunctionality))
            return x * 2
        # The CPU analog of an op: the same registration, its fast path for plain CPU tensors.
        cls.plain_cpu = (torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
                         | torch._C.DispatchKeySet(torch._C.DispatchKey.AutogradCPU)).raw_repr()
        cls.lib = torch.library.Library("fusedops_cpu_analog", "DEF")
        ft._register("analog", "(Tensor x, SymInt dim=-1) -> Tensor", impl, ft._empty_out,
                     "torch.analog", fast_kernel=ft._softmax_kernel, lib=cls.lib,
                     plain=cls.plain_cpu)
        ft._register("analog_n", "(Tensor x, Tensor? w=None, float eps=1e-05) -> Tensor",
                     lambda x, w=None, eps=1e-5: impl(x), ft._empty_out, "torch.analog_n",
                     lib=cls.lib, plain=cls.plain_cpu)
        keysets = []
        cls.lib.define("keyset(Tensor x) -> Tensor")
        cls.lib.impl("keyset", lambda x: x.clone(), "CompositeExplicitAutograd")
        cls.lib.impl("keyset", lambda ks, x: keysets.append(ks.raw_repr()) or x.clone(),
                     "Autograd", with_keyset=True)
        torch.ops.fusedops_cpu_analog.keyset(torch.randn(2))
        cls.probed_plain_cpu = keysets[0]

    def test_schemas(self):
        for want in self.SCHEMAS:
            name = want.split("(")[0].split("::")[1]
            op = getattr(torch.ops.fusedops, name).default
            self.assertEqual(str(op._schema), want)
            self.assertIn(torch.Tag.pt2_compliant_tag, op.tags)
            self.assertTrue(torch._C._dispatch_has_kernel_for_dispatch_key(op.name(), "Autograd"))

    def test_cpu_tensors_raise(self):
        ops, x = torch.ops.fusedops, torch.randn(4, 8)
        x4 = x[None, None]
        for f, args in [(ops.softmax, (x, -1)), (ops.log_softmax, (x,)),
                        (ops.layer_norm, (x, None, None, 1e-5)), (ops.rms_norm, (x,)),
                        (ops.residual_dropout, (x, x, None, 0.0, 0, 0)),
                        (ops.residual_dropout_norm, (x, x, None, None, None, 0.0, 1e-5, 0, 0)),
                        (ops.flash_attention, (x4, x4, x4)),
                        (ops.flash_attention_varlen,
                         (x[None], x[None], x[None], torch.tensor([0, 1], dtype=torch.int32),
                          torch.tensor([0, 1], dtype=torch.int32), 1, 1)),
                        (ops.grouped_mm, (x, x[None], torch.tensor([4], dtype=torch.int32)))]:
            with self.assertRaisesRegex(ValueError, "must be a CUDA tensor"):
                f(*args)
            with self.assertRaisesRegex(ValueError, "must be a CUDA tensor"):
                f(x.clone().requires_grad_(True), *args[1:])

    def test_meta_and_fake(self):
        from torch._subclasses.fake_tensor import FakeTensorMode
        ops = torch.ops.fusedops
        m = torch.empty(3, 5, 16, device="meta", dtype=torch.bfloat16)
        self.assertEqual(ops.softmax(m, 1).shape, m.shape)
        self.assertEqual(ops.layer_norm(m, None, None).stride(), (80, 16, 1))
        y, s = ops.residual_dropout_norm(m, m, None, None, None, 0.1, 1e-5, 1, 2)
        self.assertEqual((y.shape, s.shape), (m.shape, m.shape))
        q = torch.empty(2, 16, 4, 64, device="meta", dtype=torch.float16)
        o, lse = ops.flash_attention_lse(q, q, q)
        self.assertEqual((o.shape, lse.shape, lse.dtype), (q.shape, (2, 4, 16), torch.float32))
        packed = torch.empty(20, 4, 64, device="meta", dtype=torch.float16)
        cu = torch.empty(3, device="meta", dtype=torch.int32)
        self.assertEqual(ops.flash_attention_varlen(packed, packed, packed, cu, cu, 10, 10).shape,
                         packed.shape)
        with FakeTensorMode():
            a = torch.empty(10, 64, device="cuda", dtype=torch.bfloat16)
            b = torch.empty(3, 64, 50, device="cuda", dtype=torch.bfloat16)
            c = ops.grouped_mm(a, b, torch.empty(3, device="cuda", dtype=torch.int32))
            self.assertEqual((c.shape, c.stride(), c.device.type), ((10, 50), (56, 1), "cuda"))

    def test_compile_fullgraph_meta(self):
        ops = torch.ops.fusedops

        def block(x, w, r, b):
            h = ops.log_softmax(ops.softmax(x @ w, -1) * 3.0, -1)
            y, s = ops.residual_dropout_norm(h, r, b, None, None, 0.1, 1e-5, 42, 7)
            y = ops.rms_norm(ops.layer_norm(y, None, b), b, 1e-6)
            return ops.residual_dropout(y, s, b, 0.1, 42, 8)

        args = [torch.empty(*shape, device="meta") for shape in ((16, 32), (32, 64), (16, 64),
                                                                (64,))]
        for backend in ("eager", "aot_eager"):
            torch._dynamo.reset()
            out = torch.compile(block, fullgraph=True, backend=backend)(*args)
            self.assertEqual((out.shape, out.device.type), ((16, 64), "meta"))

    def test_opcheck_meta(self):
        ops = torch.ops.fusedops
        m = torch.empty(16, 64, device="meta", dtype=torch.bfloat16)
        v = torch.empty(64, device="meta", dtype=torch.bfloat16)
        q = torch.empty(2, 16, 4, 64, device="meta", dtype=torch.float16)
        a = torch.empty(10, 64, device="meta", dtype=torch.bfloat16)
        b = torch.empty(3, 64, 50, device="meta", dtype=torch.bfloat16)
        offs = torch.empty(3, device="meta", dtype=torch.int32)
        for op, args in [(ops.softmax.default, (m, -1)), (ops.log_softmax.default, (m, 0)),
                         (ops.layer_norm.default, (m, v, v, 1e-5)),
                         (ops.rms_norm.default, (m, v, 1e-6)),
                         (ops.residual_dropout.default, (m, m, v, 0.1, 1, 2)),
                         (ops.residual_dropout_norm.default, (m, m, v, v, v, 0.1, 1e-5, 1, 2)),
                         (ops.flash_attention.default, (q, q, q, True, None)),
                         (ops.flash_attention_lse.default, (q, q, q, False, 0.5)),
                         (ops.grouped_mm.default, (a, b, offs, None))]:
            with self.subTest(op=str(op)):
                torch.library.opcheck(op, args)

    def test_backward_raises(self):
        x = torch.empty(4, 8, device="meta", requires_grad=True)
        y = torch.ops.fusedops.softmax(x, -1)
        self.assertIsNotNone(y.grad_fn)
        with self.assertRaisesRegex(NotImplementedError, "fusedops.softmax has no backward "
                                    "kernel yet; use torch.softmax where gradients"):
            y.sum().backward()
        y, s = torch.ops.fusedops.residual_dropout_norm(x, x, None, None, None, 0.1, 1e-5, 0, 0)
        with self.assertRaisesRegex(NotImplementedError, "residual_dropout_norm has no backward"):
            (y.sum() + s.sum()).backward()
        with torch.no_grad():
            self.assertIsNone(torch.ops.fusedops.softmax(x, -1).grad_fn)

    def test_plain_keyset(self):
        """ft._PLAIN_CUDA is built as the CPU analog's key set is, and that one is what the
        dispatcher hands an Autograd kernel for a plain CPU tensor."""
        self.assertEqual(self.probed_plain_cpu, self.plain_cpu)
        ks = torch._C.DispatchKeySet.from_raw_repr(self.ft._PLAIN_CUDA)
        self.assertTrue(ks.has(torch._C.DispatchKey.CUDA))
        self.assertTrue(ks.has(torch._C.DispatchKey.AutogradCUDA))

    def test_autograd_kernel_paths(self):
        """On the CPU analog: the plain call runs the implementation inside the Autograd kernel;
        inference mode reaches it below autograd directly; a TorchDispatchMode, a tensor that
        requires grad, and a tensor with the neg bit go the redispatching way; backward raises."""
        from torch.utils._python_dispatch import TorchDispatchMode
        ops, below = torch.ops.fusedops_cpu_analog, self.below
        x = torch.randn(3, 4)
        for op in (ops.analog, ops.analog_n):
            below.clear()
            torch.testing.assert_close(op(x), x * 2)
            with torch.no_grad():
                op(x.clone().requires_grad_(True))
            with torch.inference_mode():
                op(x)
            self.assertEqual(below, [False, False, True], str(op))

            class Record(TorchDispatchMode):
                seen = []

                def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                    self.seen.append(str(func))
                    return func(*args, **(kwargs or {}))
            below.clear()
            with Record():
                op(x)
            self.assertIn(f"{str(op).split('.')[-1]}.default",
                          [f.split(".", 1)[1] for f in Record.seen if "analog" in f])
            self.assertEqual(below, [True])
            below.clear()
            y = op(torch._neg_view(x))
            self.assertEqual(below, [True])
            torch.testing.assert_close(y, -x * 2)
            below.clear()
            xg = x.clone().requires_grad_(True)
            y = op(xg)
            self.assertEqual(below, [True])
            self.assertTrue(y.requires_grad)
            with self.assertRaisesRegex(NotImplementedError, "has no backward kernel yet"):
                y.sum().backward()


if __name__ == "__main__":
    unittest.main()
