"""Run kernels exported by `evo export ... --torch` on torch tensors.

    import evo_torch
    attn = evo_torch.load("kernels/sdpa_fp16_wgmma_dispatch.json")   # or one kernel's .json
    o = attn(q, k, v, causal=0)

The export holds everything needed: each kernel's cubin (built by evo with NVRTC for the GPU it
was tuned on), its entry point, its argument list and the profile's expressions for buffer shapes,
launch geometry, scalars, constraints and tensor maps. This module loads the cubins through the
CUDA driver (ctypes, libcuda.so.1: no compiler, no build step) and launches them on the current
torch stream.

Calling convention (the profile's buffers, in the profile's order):
  * positional tensors are the input (and inout) buffers; any buffer may be given by name instead;
  * outputs not given are allocated (torch.empty; zeros where the profile's init says zeros), as
    is scratch; the call returns the outputs (one tensor, or a tuple in the profile's order);
  * sizes are read from the tensors (a shape entry that is a bare size name binds it); sizes no
    tensor carries (`causal`) are keyword arguments, as are scalars (default: the profile's
    expression) and fp8 descales (`q_descale=`, default 1.0).

With a dispatch table the kernel is picked by the same rule as the exported C++ header
(`<profile>_dispatch.h`): among the kernels whose profile constraints hold at the call's sizes
(with their own knobs), the one whose tuned sizes are nearest by the sum over sizes of
|log2(1 + x) - log2(1 + tuned)|, the earlier on a tie; none holds: ValueError.

Importing needs neither torch nor a GPU (the expression and dispatch logic are testable
anywhere); calling a kernel needs both.
"""

import ctypes
import json
import math
import os
import re
import threading

__all__ = ["load", "Kernel", "Dispatch", "EvoTorchError", "evaluate"]


class EvoTorchError(ValueError):
    """A call evo_torch cannot make: wrong dtype, shape, missing size, no kernel for the shape."""


# ---------------------------------------------------------------------------------------------
# Expressions: the subset of muParser evo's profiles use (engine/expr.h), with evo's extras.
# Comparisons and && || give 1.0 or 0.0; `-2^2` is -(2^2) as in muParser; `%` is fmod.

_FUNCS = {
    "ceil": (1, math.ceil), "floor": (1, math.floor), "sqrt": (1, math.sqrt), "exp": (1, math.exp),
    "log2": (1, math.log2), "log10": (1, math.log10), "ln": (1, math.log), "abs": (1, abs),
    "sin": (1, math.sin), "cos": (1, math.cos), "tan": (1, math.tan),
    "cdiv": (2, lambda a, b: float(math.ceil(a / b))), "log2i": (1, lambda a: float(math.floor(math.log2(a)))),
    "pymod": (2, lambda a, b: float(a % b)),  # Python's % (a T1 file's conditions): the divisor's sign
}
_TOKEN = re.compile(r"\s*(?:(\d+\.?\d*(?:[eE][-+]?\d+)?|\.\d+(?:[eE][-+]?\d+)?)|([A-Za-z_]\w*)|(==|!=|<=|>=|&&|\|\||[-+*/%^()<>?:,]))")


def _tokens(text):
    out, i = [], 0
    while i < len(text):
        m = _TOKEN.match(text, i)
        if not m or m.end() == i:
            if text[i:].strip() == "":
                break
            raise EvoTorchError(f"expression '{text}': unexpected '{text[i:].strip()[0]}'")
        i = m.end()
        if m.group(1):
            out.append(("num", float(m.group(1))))
        elif m.group(2):
            out.append(("name", m.group(2)))
        else:
            out.append(("op", m.group(3)))
    return out


class _Parser:
    """Recursive descent into a closure vars -> float, in muParser's precedence."""

    def __init__(self, text):
        self.text, self.toks, self.i = text, _tokens(text), 0

    def fail(self, why):
        raise EvoTorchError(f"expression '{self.text}': {why}")

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def eat(self, op):
        if self.peek() == ("op", op):
            self.i += 1
            return True
        return False

    def run(self):
        e = self.ternary()
        if self.i != len(self.toks):
            self.fail(f"unexpected '{self.peek()[1]}'")
        return e

    def ternary(self):
        c = self.logic_or()
        if not self.eat("?"):
            return c
        a = self.ternary()
        if not self.eat(":"):
            self.fail("'?' without ':'")
        b = self.ternary()
        return lambda v: a(v) if c(v) != 0.0 else b(v)

    def logic_or(self):
        left = self.logic_and()
        while self.eat("||"):
            right = self.logic_and()
            left = (lambda l, r: lambda v: 1.0 if (l(v) != 0.0 or r(v) != 0.0) else 0.0)(left, right)
        return left

    def logic_and(self):
        left = self.compare()
        while self.eat("&&"):
            right = self.compare()
            left = (lambda l, r: lambda v: 1.0 if (l(v) != 0.0 and r(v) != 0.0) else 0.0)(left, right)
        return left

    _CMP = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<=": lambda a, b: a <= b,
            ">=": lambda a, b: a >= b, "<": lambda a, b: a < b, ">": lambda a, b: a > b}

    def compare(self):
        left = self.additive()
        while True:
            kind, op = self.peek()
            if kind != "op" or op not in self._CMP:
                return left
            self.i += 1
            right, f = self.additive(), self._CMP[op]
            left = (lambda l, r, f: lambda v: 1.0 if f(l(v), r(v)) else 0.0)(left, right, f)

    def additive(self):
        left = self.multiplicative()
        while True:
            if self.eat("+"):
                right = self.multiplicative()
                left = (lambda l, r: lambda v: l(v) + r(v))(left, right)
            elif self.eat("-"):
                right = self.multiplicative()
                left = (lambda l, r: lambda v: l(v) - r(v))(left, right)
            else:
                return left

    def multiplicative(self):
        left = self.unary()
        while True:
            if self.eat("*"):
                right = self.unary()
                left = (lambda l, r: lambda v: l(v) * r(v))(left, right)
            elif self.eat("/"):
                right = self.unary()
                left = (lambda l, r: lambda v: _div(l(v), r(v)))(left, right)
            elif self.eat("%"):
                right = self.unary()
                left = (lambda l, r: lambda v: _mod(l(v), r(v)))(left, right)
            else:
                return left

    def unary(self):
        if self.eat("-"):
            e = self.unary()
            return lambda v: -e(v)
        if self.eat("+"):
            return self.unary()
        return self.power()

    def power(self):
        base = self.primary()
        if self.eat("^"):
            exp = self.unary()
            return lambda v: math.pow(base(v), exp(v))
        return base

    def primary(self):
        kind, val = self.peek()
        if kind is None:
            self.fail("ends too early")
        self.i += 1
        if kind == "num":
            return lambda v, x=val: x
        if (kind, val) == ("op", "("):
            e = self.ternary()
            if not self.eat(")"):
                self.fail("missing ')'")
            return e
        if kind == "name":
            if not self.eat("("):
                name = val

                def var(v):
                    try:
                        return float(v[name])
                    except KeyError:
                        raise EvoTorchError(f"expression '{self.text}': '{name}' is neither a size, a knob nor a define "
                                            f"(pass {name}=... if it is a size)") from None
                return var
            args = []
            if not self.eat(")"):
                args.append(self.ternary())
                while self.eat(","):
                    args.append(self.ternary())
                if not self.eat(")"):
                    self.fail(f"missing ')' after the arguments of {val}")
            if val in ("min", "max"):
                if not args:
                    self.fail(f"{val} without arguments")
                f = min if val == "min" else max
                return lambda v: float(f(a(v) for a in args))
            if val not in _FUNCS:
                self.fail(f"unknown function {val}")
            n, f = _FUNCS[val]
            if len(args) != n:
                self.fail(f"{val} takes {n} argument(s)")
            return (lambda f, args: lambda v: float(f(*(a(v) for a in args))))(f, args)
        self.fail(f"unexpected '{val}'")


def _div(a, b):
    if b == 0:
        raise EvoTorchError("division by zero in an expression")
    return a / b


def _mod(a, b):
    if b == 0:
        raise EvoTorchError("modulo by zero in an expression")
    return math.fmod(a, b)


_compiled = {}


def _device_sms():
    """NUM_SMS in a profile's expressions: the current CUDA device's multiprocessor count, as evo's
    worker gives it; 132 (H100 SXM, H200) where torch or a GPU is not at hand, as evo does."""
    try:
        import torch
        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    except Exception:  # noqa: BLE001 - no torch, no driver: the documented default
        pass
    return 132


def _expr(text):
    """A profile value (a number or an expression) as a closure vars -> float."""
    if isinstance(text, (int, float)):
        return lambda v, x=float(text): x
    f = _compiled.get(text)
    if f is None:
        f = _compiled[text] = _Parser(str(text)).run()
    return f


def evaluate(text, variables):
    """Evaluates one profile expression (e.g. "cdiv(S, TILE_M)") with these variables."""
    return _expr(text)(variables)


def _integer(text, variables, what):
    x = evaluate(text, variables)
    if x != math.floor(x) or x < 0:
        raise EvoTorchError(f"{what} = {text} = {x:g}: not a non-negative integer at these sizes")
    return int(x)


# ---------------------------------------------------------------------------------------------
# The CUDA driver, through ctypes (loaded on the first launch).

_CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
_MAP_TYPES = {"CU_TENSOR_MAP_DATA_TYPE_UINT8": 0, "CU_TENSOR_MAP_DATA_TYPE_UINT16": 1,
              "CU_TENSOR_MAP_DATA_TYPE_UINT32": 2, "CU_TENSOR_MAP_DATA_TYPE_INT32": 3,
              "CU_TENSOR_MAP_DATA_TYPE_UINT64": 4, "CU_TENSOR_MAP_DATA_TYPE_INT64": 5,
              "CU_TENSOR_MAP_DATA_TYPE_FLOAT16": 6, "CU_TENSOR_MAP_DATA_TYPE_FLOAT32": 7,
              "CU_TENSOR_MAP_DATA_TYPE_FLOAT64": 8, "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16": 9}
_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}
_L2_PROMOTION = {0: 0, 64: 1, 128: 2, 256: 3}
_ELEMENT_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "fp8_e4m3": 1, "fp8_e5m2": 1, "i32": 4, "u8": 1, "i8": 1, "u16": 2,
                  "i16": 2, "u32": 4, "i64": 8, "u64": 8, "f64": 8}
# A scalar argument's C type (an evo scalar may be any dtype; bf16 and fp8 ones are passed as their bits).
_SCALAR_CTYPES = {"f32": "c_float", "f64": "c_double", "i32": "c_int32", "u32": "c_uint32", "i64": "c_int64",
                  "u64": "c_uint64", "i16": "c_int16", "u16": "c_uint16", "i8": "c_int8", "u8": "c_uint8"}


class _Driver:
    _lock = threading.Lock()
    lib = None  # libcuda, once loaded
    _bound = threading.local()  # per thread: devices whose context was seen current

    @classmethod
    def get(cls):
        with cls._lock:
            if cls.lib is None:
                try:
                    lib = ctypes.CDLL("libcuda.so.1")
                except OSError as e:
                    raise RuntimeError(f"evo_torch: cannot load the CUDA driver libcuda.so.1 ({e})") from None
                for name, argtypes in {
                    "cuInit": [ctypes.c_uint],
                    "cuGetErrorString": [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)],
                    "cuCtxGetCurrent": [ctypes.POINTER(ctypes.c_void_p)],
                    "cuCtxSetCurrent": [ctypes.c_void_p],
                    "cuDeviceGet": [ctypes.POINTER(ctypes.c_int), ctypes.c_int],
                    "cuDevicePrimaryCtxRetain": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int],
                    "cuModuleLoadData": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p],
                    "cuModuleGetFunction": [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p],
                    "cuFuncSetAttribute": [ctypes.c_void_p, ctypes.c_int, ctypes.c_int],
                    "cuLaunchKernel": [ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
                                       ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_void_p,
                                       ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)],
                    "cuTensorMapEncodeTiled": [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint, ctypes.c_void_p,
                                               ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint64),
                                               ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
                                               ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int],
                }.items():
                    fn = getattr(lib, name)
                    fn.argtypes, fn.restype = argtypes, ctypes.c_int
                cls.lib = lib
                cls.check(lib.cuInit(0), "cuInit")
            return cls.lib

    @classmethod
    def check(cls, code, what):
        if code != 0:
            text = ctypes.c_char_p()
            cls.lib.cuGetErrorString(code, ctypes.byref(text))
            raise RuntimeError(f"evo_torch: {what}: CUDA error {code} ({(text.value or b'?').decode()})")

    @classmethod
    def bind_context(cls, device_index):
        """Makes torch's context for the device current on this thread (torch uses the primary one)."""
        lib = cls.get()
        ctx = ctypes.c_void_p()
        cls.check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            dev = ctypes.c_int()
            cls.check(lib.cuDeviceGet(ctypes.byref(dev), device_index), "cuDeviceGet")
            cls.check(lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            cls.check(lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        return lib

    @classmethod
    def ensure_context(cls, device_index):
        """bind_context once per thread and device (a thread torch never touched has none current)."""
        seen = getattr(cls._bound, "devices", None)
        if seen is None:
            seen = cls._bound.devices = set()
        if device_index not in seen:
            cls.bind_context(device_index)
            seen.add(device_index)


# ---------------------------------------------------------------------------------------------
# One exported kernel (a .json written by `evo export --torch`).

def _is_size_name(entry):
    return isinstance(entry, str) and re.fullmatch(r"[A-Za-z_]\w*", entry) is not None


class Kernel:
    """One exported kernel (or a fixed sequence of launches), callable on torch tensors."""

    def __init__(self, export_path):
        self.path = os.path.abspath(export_path)
        with open(self.path) as f:
            self.meta = json.load(f)
        m = self.meta
        if m.get("format") != "evo-export/1":
            raise EvoTorchError(f"{self.path}: not an evo export (format {m.get('format')!r}, want 'evo-export/1')")
        folder = os.path.dirname(self.path)
        self.name = os.path.splitext(os.path.basename(self.path))[0]
        self.problem = m.get("problem", "")
        self.size_names = list(m.get("sizes", []))
        self.tuned_sizes = {k: float(v) for k, v in m.get("problem_sizes", {}).items()}
        self.buffers = m["buffers"]
        for b in self.buffers:
            if "torch_dtype" not in b:
                raise EvoTorchError(f"{self.path}: buffer {b['name']} is {b['dtype']}, which has no torch dtype")
            if b.get("symbol"):
                raise EvoTorchError(f"{self.path}: buffer {b['name']} fills a __constant__ symbol, which evo_torch does not write")
        self.scalars = {s["name"]: s for s in m.get("scalars", [])}
        self.descales = {b["scale_arg"]: b["name"] for b in self.buffers if b.get("scale_arg")}
        self.maps = {t["name"]: t for t in m.get("tensor_maps", [])}
        self.constraints = list(m.get("constraints", []))
        # Knobs and defines are fixed for this kernel; sizes come from the call.
        self.fixed = {}
        for k, v in m.get("defines", {}).items():
            try:
                self.fixed[k] = float(evaluate(v, {}))
            except (EvoTorchError, ValueError):
                pass  # a define that is not a number (a type name) takes no part in expressions
        self.fixed.update({k: float(v) for k, v in m["knobs"].items()})
        if "launches" in m:
            self.launches = [dict(l) for l in m["launches"]]
        else:
            self.launches = [{"kernel": m["kernel"], "lowered_name": m.get("lowered_name"), "cubin": m.get("cubin"),
                              "args": m["args"], "launch": m["launch"]}]
        for l in self.launches:
            if not l.get("cubin"):
                raise EvoTorchError(f"{self.path}: launch of {l['kernel']} has no cubin (export with --torch)")
            if not l.get("lowered_name"):
                raise EvoTorchError(f"{self.path}: launch of {l['kernel']} has no lowered name (export with --torch)")
            l["cubin_path"] = os.path.join(folder, l["cubin"])
            if not os.path.exists(l["cubin_path"]):
                raise EvoTorchError(f"{self.path}: its cubin {l['cubin_path']} is missing")
        self.buffers_by_name = {b["name"]: b for b in self.buffers}
        self._functions = {}  # (device index, launch index) -> CUfunction
        self._lock = threading.Lock()
        self._plans = {}  # sizes -> _Plan
        self._scratch = {}  # (device, stream, sizes) -> scratch tensors
        self._maps_encoded = {}  # (map, address, layout) -> CUtensorMap
        self._smem_set = set()  # (device, launch) whose shared-memory opt-in is set
        self._dtypes = None

    # -- what the call means -------------------------------------------------------------------

    def variables(self, sizes):
        v = {"NUM_SMS": float(_device_sms())}  # a profile's size, define or knob of that name wins
        v.update(self.fixed)
        v.update({k: float(x) for k, x in sizes.items()})
        return v

    def holds(self, sizes):
        """Whether this kernel may run these sizes: its profile's constraints, with its knobs."""
        v = self.variables(sizes)
        try:
            return all(evaluate(c, v) != 0.0 for c in self.constraints)
        except EvoTorchError:
            return False


    def geometry(self, sizes, launch=0):
        """(grid, block, dynamic shared bytes) of one launch at these sizes."""
        v = self.variables(sizes)
        l = self.launches[launch]["launch"]
        grid = tuple(_integer(e, v, f"grid[{i}]") for i, e in enumerate(l["grid_expr"]))
        block = tuple(_integer(e, v, f"block[{i}]") for i, e in enumerate(l["block_expr"]))
        return grid, block, _integer(l["shared_bytes_expr"], v, "shared_bytes")

    def shape(self, buffer, sizes):
        v = self.variables(sizes)
        return tuple(_integer(e, v, f"buffer {buffer['name']} shape") for e in buffer["shape"])

    def bind(self, args, kwargs):
        """Tensors by buffer name, and the sizes, from a call's arguments."""
        inputs = [b for b in self.buffers if b["role"] in ("input", "inout")]
        if len(args) > len(inputs):
            raise EvoTorchError(f"{self.name}: {len(args)} positional tensors, the kernel takes {len(inputs)} "
                                f"({', '.join(b['name'] for b in inputs)})")
        tensors = {b["name"]: t for b, t in zip(inputs, args)}
        names = {b["name"] for b in self.buffers}
        extras = {}
        for k, x in kwargs.items():
            if k in names:
                if k in tensors:
                    raise EvoTorchError(f"{self.name}: buffer {k} given twice (positionally and by name)")
                tensors[k] = x
            elif k in self.size_names or k in self.scalars or k in self.descales:
                extras[k] = x
            else:
                raise EvoTorchError(f"{self.name}: unknown argument {k}= (buffers: {', '.join(sorted(names))}; sizes: "
                                    f"{', '.join(self.size_names)}; scalars: {', '.join(self.scalars) or 'none'}; "
                                    f"descales: {', '.join(self.descales) or 'none'})")
        for b in inputs:
            if b["name"] not in tensors:
                raise EvoTorchError(f"{self.name}: input {b['name']} not given")
        sizes = {k: float(extras[k]) for k in self.size_names if k in extras}
        for b in self.buffers:
            t = tensors.get(b["name"])
            if t is None or len(t.shape) != len(b["shape"]):
                continue
            for entry, n in zip(b["shape"], t.shape):
                if _is_size_name(entry) and entry in self.size_names:
                    if entry in sizes and sizes[entry] != n:
                        raise EvoTorchError(f"{self.name}: size {entry} is {sizes[entry]:g} elsewhere but {b['name']} "
                                            f"has {n} there (shape {list(t.shape)} for {b['shape']})")
                    sizes[entry] = float(n)
        missing = [k for k in self.size_names if k not in sizes]
        if missing:
            raise EvoTorchError(f"{self.name}: size{'s' if len(missing) > 1 else ''} {', '.join(missing)} not given and "
                                f"not in any tensor's shape: pass {', '.join(k + '=...' for k in missing)}")
        return tensors, sizes, extras

    # -- running it ----------------------------------------------------------------------------

    def _function(self, device_index, i):
        key = (device_index, i)
        with self._lock:
            f = self._functions.get(key)
            if f is None:
                lib = _Driver.bind_context(device_index)
                l = self.launches[i]
                with open(l["cubin_path"], "rb") as fh:
                    image = fh.read()
                module = ctypes.c_void_p()
                _Driver.check(lib.cuModuleLoadData(ctypes.byref(module), image), f"loading {l['cubin']}")
                fn = ctypes.c_void_p()
                _Driver.check(lib.cuModuleGetFunction(ctypes.byref(fn), module, l["lowered_name"].encode()),
                              f"{l['cubin']}: entry {l['lowered_name']}")
                f = self._functions[key] = (fn, module, image)
            return f[0]

    def __call__(self, *args, **kwargs):
        import torch  # only a call needs torch

        tensors, sizes, extras = self.bind(args, kwargs)
        return self.run(torch, tensors, sizes, extras)

    def plan(self, sizes):
        """What a call at these sizes needs that does not depend on the tensors, computed once per shape."""
        key = tuple(sorted(sizes.items()))
        p = self._plans.get(key)
        if p is not None:
            return p
        v = self.variables(sizes)
        bad = [c for c in self.constraints if evaluate(c, v) == 0.0]
        if bad:
            raise EvoTorchError(f"{self.name}: its constraints do not hold at {_sizes_text(sizes)}: {bad[0]}")
        p = _Plan()
        p.key = key
        p.shapes = {b["name"]: self.shape(b, sizes) for b in self.buffers}
        p.numel = {n: math.prod(sh) for n, sh in p.shapes.items()}
        p.launches = []
        for i, l in enumerate(self.launches):
            grid, block, smem = self.geometry(sizes, i)
            args = []
            for name in l["args"]:
                if name in self.buffers_by_name:
                    args.append(("tensor", name, None))
                elif name in self.scalars:
                    s = self.scalars[name]
                    if s["dtype"] not in _SCALAR_CTYPES:
                        raise EvoTorchError(f"{self.path}: scalar {name} is {s['dtype']}, which evo_torch does not pass")
                    ctype = getattr(ctypes, _SCALAR_CTYPES[s["dtype"]])
                    x = evaluate(s["value"], v)
                    args.append(("scalar", name, (ctype, ctype(x if s["dtype"] in ("f32", "f64") else int(round(x))))))
                elif name in self.descales:
                    args.append(("scalar", name, (ctypes.c_float, ctypes.c_float(1.0))))
                elif name in self.maps:
                    args.append(("map", name, self._map_layout(self.maps[name], v)))
                elif name in sizes:
                    args.append(("const", name, ctypes.c_int32(int(sizes[name]))))
                else:
                    raise EvoTorchError(f"{self.name}: argument {name} is not a buffer, scalar, descale, tensor map or size")
            p.launches.append((grid, block, smem, args))
        if len(self._plans) > 256:  # a bounded memo: shapes come and go
            self._plans.clear()
        self._plans[key] = p
        return p

    def run(self, torch, tensors, sizes, extras):
        p = self.plan(sizes)
        if self._dtypes is None:
            self._dtypes = {b["name"]: getattr(torch, b["torch_dtype"]) for b in self.buffers}
        device = None
        for name, t in tensors.items():
            if not isinstance(t, torch.Tensor):
                raise EvoTorchError(f"{self.name}: {name} is a {type(t).__name__}, not a torch tensor")
            if not t.is_cuda:
                raise EvoTorchError(f"{self.name}: {name} is on {t.device}, not a CUDA device")
            if device is None:
                device = t.device
            elif t.device != device:
                raise EvoTorchError(f"{self.name}: {name} is on {t.device}, the others on {device}")
            if t.dtype != self._dtypes[name]:
                raise EvoTorchError(f"{self.name}: {name} is {t.dtype}, the kernel takes {self._dtypes[name]}")
            if t.numel() != p.numel[name]:
                raise EvoTorchError(f"{self.name}: {name} has shape {list(t.shape)}, the kernel takes "
                                    f"{list(p.shapes[name])} = {self.buffers_by_name[name]['shape']} at {_sizes_text(sizes)}")
            if not t.is_contiguous():
                raise EvoTorchError(f"{self.name}: {name} is not contiguous (call .contiguous() first)")
        stream = torch.cuda.current_stream(device)
        switch = device.index != torch.cuda.current_device()
        if switch:
            guard = torch.cuda.device(device)
            guard.__enter__()
        try:
            # Scratch is the kernel's own business between launches (evo's GREEN runs it on scratch
            # kept across launches, as here): one set per device, stream and shape, so that calls on
            # other streams never share it.
            skey = (device.index, stream.cuda_stream, p.key)
            scratch = self._scratch.get(skey)
            if scratch is None:
                scratch = {b["name"]: _allocate(torch, b, p.shapes[b["name"]], self._dtypes[b["name"]], device)
                           for b in self.buffers if b["role"] == "scratch"}
                self._scratch[skey] = scratch
            outputs = []
            for b in self.buffers:
                n = b["name"]
                if n not in tensors:
                    tensors[n] = scratch[n] if b["role"] == "scratch" else \
                        _allocate(torch, b, p.shapes[n], self._dtypes[n], device)
                if b["role"] in ("output", "inout"):
                    outputs.append(tensors[n])
            _Driver.ensure_context(device.index)
            for i, launch in enumerate(p.launches):
                self._launch(i, launch, tensors, extras, stream.cuda_stream, device.index)
        finally:
            if switch:
                guard.__exit__(None, None, None)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    def _launch(self, i, launch, tensors, extras, stream, device_index):
        fn = self._function(device_index, i)
        lib = _Driver.lib
        grid, block, smem, args = launch
        values = []
        for kind, name, how in args:
            if kind == "tensor":
                values.append(ctypes.c_void_p(tensors[name].data_ptr()))
            elif kind == "scalar":
                ctype, default = how
                if name in extras:
                    x = extras[name]
                    values.append(ctype(int(x)) if ctype is ctypes.c_int32 else ctype(float(x)))
                else:
                    values.append(default)
            elif kind == "map":
                values.append(self._tensor_map(name, how, tensors[how["buffer"]].data_ptr()))
            else:
                values.append(how)
        params = (ctypes.c_void_p * max(1, len(values)))(*[ctypes.addressof(x) for x in values])
        if smem > 48 * 1024 and (device_index, i) not in self._smem_set:
            _Driver.check(lib.cuFuncSetAttribute(fn, _CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem),
                          f"{self.launches[i]['kernel']}: {smem} bytes of dynamic shared memory")
            self._smem_set.add((device_index, i))
        _Driver.check(lib.cuLaunchKernel(fn, grid[0], grid[1], grid[2], block[0], block[1], block[2], smem,
                                         stream, params, None),
                      f"launching {self.launches[i]['kernel']} grid {grid} block {block} smem {smem}")

    def _map_layout(self, m, v):
        """A tensor map's encoding at these sizes, as evo's own launch computes it (engine/launch.cpp)."""
        rank = len(m["dims_expr"])
        dims = [_integer(e, v, f"tensor map {m['name']} dims") for e in m["dims_expr"]]
        box = [_integer(e, v, f"tensor map {m['name']} box") for e in m["box_expr"]]
        buffer = self.buffers_by_name[m["buffer"]]
        stride, strides = _ELEMENT_BYTES[buffer["dtype"]], []
        for i in range(1, rank):
            stride *= dims[i - 1]
            strides.append(stride)
        return {"buffer": m["buffer"], "name": m["name"], "rank": rank, "type": _MAP_TYPES[m["data_type"]],
                "dims": (ctypes.c_uint64 * rank)(*dims), "strides": (ctypes.c_uint64 * max(1, rank - 1))(*strides),
                "box": (ctypes.c_uint32 * rank)(*box), "ones": (ctypes.c_uint32 * rank)(*([1] * rank)),
                "swizzle": _SWIZZLE[m["swizzle_bytes"]], "l2": _L2_PROMOTION[m["l2_promotion_bytes"]],
                "text": f"dims {dims}, box {box}", "key": (m["name"], tuple(dims), tuple(box))}

    def _tensor_map(self, name, layout, address):
        """A CUtensorMap (128 bytes, 64-aligned) over the buffer; memoised by address and layout."""
        key = (address, layout["key"])
        value = self._maps_encoded.get(key)
        if value is not None:
            return value
        raw = (ctypes.c_uint8 * (128 + 64))()
        at = (ctypes.addressof(raw) + 63) // 64 * 64
        _Driver.check(_Driver.lib.cuTensorMapEncodeTiled(
            ctypes.c_void_p(at), layout["type"], layout["rank"], ctypes.c_void_p(address), layout["dims"],
            layout["strides"], layout["box"], layout["ones"], 0, layout["swizzle"], layout["l2"], 0),
            f"cuTensorMapEncodeTiled({name}: {layout['text']})")
        value = (ctypes.c_uint8 * 128).from_address(at)
        value._keep = raw  # the storage lives as long as the value does
        if len(self._maps_encoded) > 1024:
            self._maps_encoded.clear()
        self._maps_encoded[key] = value
        return value


class _Plan:
    __slots__ = ("key", "shapes", "numel", "launches")


def _allocate(torch, b, shape, dtype, device):
    init = b.get("init") or {}
    dist = init.get("dist")
    if dist == "zeros":
        return torch.zeros(shape, dtype=dtype, device=device)
    if dist == "constant":
        return torch.full(shape, float(init["value"]), dtype=dtype, device=device)
    if b["role"] == "scratch" and dist == "normal":
        return (torch.randn(shape, device=device) * init["std"] + init["mean"]).to(dtype)
    if b["role"] == "scratch" and dist == "uniform":
        return (torch.rand(shape, device=device) * (init["high"] - init["low"]) + init["low"]).to(dtype)
    return torch.empty(shape, dtype=dtype, device=device)


def _sizes_text(sizes):
    return ", ".join(f"{k}={v:g}" for k, v in sizes.items())


# ---------------------------------------------------------------------------------------------
# A dispatch table (`evo export best --dispatch --torch`): a kernel per tuned shape.

class Dispatch:
    """Kernels tuned per shape, one picked per call by the header's rule."""

    def __init__(self, dispatch_path):
        self.path = os.path.abspath(dispatch_path)
        with open(self.path) as f:
            self.meta = json.load(f)
        if self.meta.get("format") != "evo-dispatch/1":
            raise EvoTorchError(f"{self.path}: not an evo dispatch table (format {self.meta.get('format')!r}, "
                                "want 'evo-dispatch/1')")
        folder = os.path.dirname(self.path)
        self.size_names = list(self.meta["sizes"])
        loaded = {}  # a configuration best on several problems is one export, loaded once
        self.kernels = []
        for e in self.meta["entries"]:
            if e["export"] not in loaded:
                loaded[e["export"]] = Kernel(os.path.join(folder, e["export"]))
            self.kernels.append(loaded[e["export"]])
        self.problems = [e["problem"] for e in self.meta["entries"]]
        if not self.kernels:
            raise EvoTorchError(f"{self.path}: no kernels in the table")
        self.tuned = [{k: float(e["sizes"][k]) for k in self.size_names} for e in self.meta["entries"]]
        self._picks = {}  # sizes -> index

    def pick(self, sizes):
        """Index of the kernel to run for these sizes, or None when no kernel's constraints hold."""
        key = tuple(sorted(sizes.items()))
        if key not in self._picks:
            if len(self._picks) > 1024:
                self._picks.clear()
            self._picks[key] = self._nearest(sizes)
        return self._picks[key]

    def _nearest(self, sizes):
        best, best_d = None, 0.0
        for i, k in enumerate(self.kernels):
            if not k.holds(sizes):
                continue
            d = sum(abs(math.log2(1 + float(sizes[n])) - math.log2(1 + self.tuned[i][n])) for n in self.size_names)
            if best is None or d < best_d:
                best, best_d = i, d
        return best

    def __call__(self, *args, **kwargs):
        import torch

        tensors, sizes, extras = self.kernels[0].bind(args, kwargs)
        i = self.pick(sizes)
        if i is None:
            raise EvoTorchError(f"{os.path.basename(self.path)}: no kernel's constraints hold at {_sizes_text(sizes)} "
                                f"(tuned: {', '.join(self.problems)})")
        return self.kernels[i].run(torch, tensors, sizes, extras)


def load(path):
    """A callable for an export: a dispatch table (<profile>_dispatch.json) or one kernel's .json."""
    with open(path) as f:
        fmt = json.load(f).get("format")
    if fmt == "evo-dispatch/1":
        return Dispatch(path)
    if fmt == "evo-export/1":
        return Kernel(path)
    raise EvoTorchError(f"{path}: neither an evo dispatch table nor an evo export (format {fmt!r})")
