"""What kind of value each expression of an answer can hold, as far as the contract needs to know.

The contract forbids torch compute outside kernels, and plain operators compute when an operand is
a tensor (`x * 0.5`, `sum(x.unbind(0))`). Names carry no types, so this module infers a small,
conservative kind per expression: a value is SCALAR only when it provably is not a tensor (a
literal, a shape, a stride, a device, a dtype, arithmetic of those); anything else counts as a
TENSOR for the rules. Helper parameters take the join of what their call sites pass.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from kernelgym.judge.contract import TENSOR_ATTRIBUTES

SCALAR = "scalar"  # provably not a tensor: numbers, strings, shapes, dtypes, devices, configs
TENSOR = "tensor"  # a tensor, or anything not proven otherwise
LAYER = "layer"  # an nn.Module instance (calling it runs torch)
INSTANCE = "instance"  # an instance of the answer's own nn.Module class (calling it runs its checked forward)
STATE = "state"  # a container that outlives a call (module-level or on self): storing into it caches
ARGS = "args"  # the launch's argument dict a grid, heuristic or autotune hook is handed (name: its kernel)
SELF = "self"
FUNC = "func"  # a function of the answer (helper, method, lambda)
KERNEL = "kernel"  # a @triton.jit function (launch it with kernel[grid](...))
CLASS = "class"
PATH = "path"  # a name reached through an import (torch.empty, math.sqrt, tl)
NONE = "none"

# Tensor methods whose result is metadata, not a tensor.
_SCALAR_METHODS = frozenset({"size", "stride", "numel", "dim", "ndimension", "nelement", "element_size",
                             "is_contiguous", "data_ptr", "storage_offset", "is_floating_point", "is_complex",
                             "get_device"})
# Attributes of nn layers that hold tensors; other layer attributes are submodules or settings.
_LAYER_TENSORS = frozenset({"weight", "bias", "running_mean", "running_var", "in_proj_weight", "in_proj_bias",
                            "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0", "num_batches_tracked"})
_LAYER_SETTINGS = frozenset({"in_features", "out_features", "in_channels", "out_channels", "kernel_size", "stride",
                             "padding", "dilation", "groups", "eps", "momentum", "normalized_shape", "num_features",
                             "negative_slope", "dim", "p", "num_heads", "embed_dim", "training", "affine",
                             "elementwise_affine", "output_size", "padding_mode", "output_padding", "inplace",
                             "num_groups", "beta", "threshold", "lambd", "min_val", "max_val", "approximate"})
# Results of these builtins are scalars when their arguments are.
_SCALAR_BUILTINS = frozenset({"len", "int", "float", "bool", "str", "round", "abs", "min", "max", "sum", "divmod",
                              "pow", "isinstance", "hasattr", "callable", "any", "all", "repr", "format", "range",
                              "slice"})


@dataclass(frozen=True)
class Kind:
    """The kind of a value; `name` says which function/kernel/class/path when there is one."""

    kind: str
    name: str = ""

    @property
    def scalar(self) -> bool:
        return self.kind in (SCALAR, NONE, PATH)  # a module, dtype or library function is no tensor


S = Kind(SCALAR)
T = Kind(TENSOR)


def join(*kinds: Kind) -> Kind:
    """The least precise of several kinds (a name assigned twice holds either)."""
    ks = [k for k in kinds if k.kind != NONE]
    if not ks:
        return Kind(NONE)
    if all(k == ks[0] for k in ks):
        return ks[0]
    if all(k.scalar for k in ks):
        return S
    for strong in (STATE, LAYER, TENSOR):
        if any(k.kind == strong for k in ks):
            return Kind(strong)
    return T


@dataclass
class ModuleFacts:
    """What the module defines, for typing names inside functions."""

    aliases: dict[str, str] = field(default_factory=dict)  # local name -> dotted import path
    globals: dict[str, Kind] = field(default_factory=dict)  # module-level names
    self_attrs: dict[str, dict[str, Kind]] = field(default_factory=dict)  # class -> self.<attr> kinds
    methods: dict[str, set[str]] = field(default_factory=dict)  # class -> method names
    returns: dict[str, Kind] = field(default_factory=dict)  # function key -> return kind
    params: dict[str, list[Kind]] = field(default_factory=dict)  # function key -> parameter kinds
    # function key -> per parameter, the kind of its default (None: no default); a call site that
    # does not pass a parameter passes its default
    defaults: dict[str, list[Kind | None]] = field(default_factory=dict)
    # the answer's classes that derive from nn.Module only through answer classes -> those bases
    modules: dict[str, list[str]] = field(default_factory=dict)
    kernel_params: dict[str, list[str]] = field(default_factory=dict)  # kernel name -> its parameter names
    # some container kept across calls holds a value that may be a tensor: what is read from state may be one
    state_tensor: bool = False

    def lineage(self, cls: str) -> list[str]:
        """`cls` and its answer-class bases, nearest first (breadth-first, each once)."""
        out: list[str] = []
        todo = [cls]
        while todo:
            c = todo.pop(0)
            if c not in out:
                out.append(c)
                todo.extend(self.modules.get(c, []))
        return out

    def find_method(self, cls: str, name: str) -> str | None:
        """The key of the method `name` an instance of the answer's class `cls` runs, through its
        answer-class bases (None: defined by nn.Module or nowhere)."""
        return next((f"{c}.{name}" for c in self.lineage(cls) if name in self.methods.get(c, set())), None)

    def instance_attr(self, cls: str, attr: str) -> Kind | None:
        """What `<instance>.<attr>` holds on an instance of `cls` (its own __init__ first, then its bases')."""
        found = next((self.self_attrs[c][attr] for c in self.lineage(cls) if attr in self.self_attrs.get(c, {})), None)
        return Kind(INSTANCE, cls) if found is not None and found.kind == SELF else found


def resolve(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The dotted path an expression names through the imports (`nn.functional.relu` ->
    'torch.nn.functional.relu'), or None when its root is not an imported name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id in aliases:
        return ".".join([aliases[node.id], *reversed(parts)])
    return None


class Scope:
    """Kinds of the names visible in one function (or the module), with the module's facts behind."""

    def __init__(self, facts: ModuleFacts, cls: str | None, local: dict[str, Kind] | None = None,
                 outer: "Scope | None" = None) -> None:
        self.facts, self.cls, self.local, self.outer = facts, cls, dict(local or {}), outer
        self.containers: set[str] = set()  # locals only ever bound to a list/dict/set display: writes into them store

    def lookup(self, name: str) -> Kind | None:
        if name in self.local:
            return self.local[name]
        if self.outer is not None:
            return self.outer.lookup(name)
        if name in self.facts.aliases:
            return Kind(PATH, self.facts.aliases[name])
        return self.facts.globals.get(name)

    def bind(self, target: ast.AST, kind: Kind) -> None:
        """Bind assignment targets (names, tuples of names) to a kind, joined with earlier bindings."""
        if isinstance(target, ast.Name):
            self.local[target.id] = join(self.local[target.id], kind) if target.id in self.local else kind
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                self.bind(elt, kind)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, kind)

    # -- expression kinds -----------------------------------------------------------------
    def kind(self, node: ast.AST | None) -> Kind:  # noqa: C901 - one case per expression type
        if node is None:
            return Kind(NONE)
        if isinstance(node, ast.Constant):
            return Kind(NONE) if node.value is None else S
        if isinstance(node, ast.JoinedStr):
            return S
        if isinstance(node, ast.Name):
            found = self.lookup(node.id)
            if found is not None:
                return found
            return Kind(FUNC, f"builtin:{node.id}")
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Subscript):
            base = self.kind(node.value)
            if base.kind == KERNEL:
                return Kind(KERNEL, base.name + "[]")
            if base.kind == PATH:
                return S  # typing subscripts (Optional[int]) and constants
            if base.kind == STATE:
                return T if self.facts.state_tensor else Kind(STATE)
            if base.kind == ARGS:
                return self.launch_arg(base.name, node.slice)
            return base if base.kind in (TENSOR, LAYER) else S if base.scalar else T
        if isinstance(node, ast.Call):
            return self._call(node)
        if isinstance(node, (ast.BinOp,)):
            return join(self.kind(node.left), self.kind(node.right))
        if isinstance(node, ast.UnaryOp):
            return self.kind(node.operand)
        if isinstance(node, ast.BoolOp):
            return join(*(self.kind(v) for v in node.values))
        if isinstance(node, ast.Compare):
            if all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                return S
            return join(self.kind(node.left), *(self.kind(c) for c in node.comparators))
        if isinstance(node, ast.IfExp):
            return join(self.kind(node.body), self.kind(node.orelse))
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return join(*(self.kind(e) for e in node.elts)) if node.elts else S
        if isinstance(node, ast.Dict):
            return join(*(self.kind(v) for v in node.values if v is not None)) if node.values else S
        if isinstance(node, ast.Starred):
            return self.kind(node.value)
        if isinstance(node, ast.NamedExpr):
            return self.kind(node.value)
        if isinstance(node, ast.Lambda):
            return Kind(FUNC, "lambda")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            return self.comprehension(node.generators, [node.elt])
        if isinstance(node, ast.DictComp):
            return self.comprehension(node.generators, [node.key, node.value])
        if isinstance(node, ast.Slice):
            return join(self.kind(node.lower), self.kind(node.upper), self.kind(node.step))
        return T

    def comprehension(self, generators: list[ast.comprehension], elts: list[ast.AST]) -> Kind:
        inner = Scope(self.facts, self.cls, outer=self)
        for gen in generators:
            inner.bind(gen.target, inner.element_kind(gen.iter))
        return join(*(inner.kind(e) for e in elts))

    def element_kind(self, iterable: ast.AST) -> Kind:
        """What iterating `iterable` yields."""
        k = self.kind(iterable)
        if k.kind == PATH:
            return T
        if k.kind == ARGS:
            return S  # iterating a dict yields its keys
        if k.kind == STATE and self.facts.state_tensor:
            return T
        return S if k.scalar else k if k.kind in (TENSOR, LAYER, STATE) else T

    def may_hold_tensor(self, node: ast.AST) -> bool:
        """Whether reading `node`'s values (its text, a comparison with it) may read a tensor's: a tensor,
        a layer, a launch's argument dict, or state when some state holds a tensor."""
        k = self.kind(node)
        return k.kind in (TENSOR, LAYER, ARGS) or (k.kind == STATE and self.facts.state_tensor)

    def launch_arg(self, kernel: str, key: ast.AST | None) -> Kind:
        """`args["name"]` in a grid, heuristic or autotune hook: what the kernel's launch sites pass for
        that parameter (not passed: a config or constexpr, no tensor); any other key may be a tensor."""
        if not (isinstance(key, ast.Constant) and isinstance(key.value, (str, int))) or \
                kernel not in self.facts.kernel_params:
            return T
        names = self.facts.kernel_params[kernel]
        if key.value not in names:
            return S
        passed = self.facts.params.get(kernel, [])
        i = names.index(key.value)
        k = passed[i] if i < len(passed) else Kind(NONE)
        return S if k.kind == NONE else k

    def _attribute(self, node: ast.Attribute) -> Kind:
        base = self.kind(node.value)
        attr = node.attr
        if base.kind == PATH:
            return Kind(PATH, f"{base.name}.{attr}")
        if base.kind == SELF:
            attrs = self.facts.self_attrs.get(self.cls or "", {})
            if attr in attrs:
                return attrs[attr]
            if attr in self.facts.methods.get(self.cls or "", set()):
                return Kind(FUNC, f"{self.cls}.{attr}")
            return S if attr == "training" else T
        if base.kind == TENSOR:
            if attr in ("T", "mT", "data"):
                return T
            if attr in TENSOR_ATTRIBUTES:
                return S
            return Kind(FUNC, f"tensor.{attr}")
        if base.kind == LAYER:
            if attr in _LAYER_TENSORS:
                return T
            return S if attr in _LAYER_SETTINGS else Kind(LAYER)
        if base.kind == STATE:
            return Kind(STATE)  # its methods (reads, stores) are judged by name
        if base.kind == ARGS:
            return Kind(FUNC, f"func.{attr}") if attr in ("get", "keys", "items", "values") else T
        if base.kind == INSTANCE:
            method = self.facts.find_method(base.name, attr)
            if method is not None:
                return Kind(FUNC, method)
            found = self.facts.instance_attr(base.name, attr)
            return found if found is not None else S if attr == "training" else T
        if base.kind == CLASS and attr in self.facts.methods.get(base.name, set()):
            return Kind(FUNC, f"{base.name}.{attr}")  # ModelNew.launch(...): a method named through its class
        if base.kind in (FUNC, KERNEL, CLASS):
            return Kind(FUNC, f"{base.kind}.{attr}")
        return S if base.scalar else T

    def _call(self, node: ast.Call) -> Kind:
        func = node.func
        args = [self.kind(a) for a in node.args] + [self.kind(k.value) for k in node.keywords]
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and \
                isinstance(func.value.func, ast.Name) and func.value.func.id == "super":
            return Kind(NONE)
        if isinstance(func, ast.Attribute) and func.attr in ("get", "keys") and self.kind(func.value).kind == ARGS:
            base = self.kind(func.value)
            return S if func.attr == "keys" else self.launch_arg(base.name, node.args[0] if node.args else None)
        callee = self.kind(func)
        if callee.kind == KERNEL and callee.name.endswith("[]"):
            return Kind(NONE)  # a launch returns nothing useful
        if callee.kind == PATH:
            if callee.name in ("typing.cast", "functools.partial", "functools.reduce") or \
                    callee.name.split(".")[0] == "math":
                # These hand back (or compute on) their arguments: a tensor stays a tensor, a torch
                # function stays that function (so calling the result is judged like calling it).
                if callee.name == "functools.partial" and args:
                    return args[0]
                if callee.name == "typing.cast" and len(args) > 1:
                    return args[1]
                return S if all(a.scalar and a.kind != PATH for a in args) else T
            if callee.name in _CONSTEXPR_PATHS and any(not a.scalar for a in args):
                return T  # tl.constexpr(t) holds the tensor (its text is the tensor's)
            return _path_call_kind(callee.name)
        if callee.kind == FUNC:
            name = callee.name
            if name.startswith("builtin:"):
                builtin = name.split(":", 1)[1]
                if builtin in ("isinstance", "hasattr", "callable", "len", "repr", "str", "format", "print"):
                    return S
                if builtin in _SCALAR_BUILTINS:
                    return S if all(a.scalar for a in args) else T
                if builtin in ("tuple", "list", "sorted", "reversed", "enumerate", "zip", "map", "dict", "set"):
                    return join(*args) if args else S
                return S if builtin in ("print", "super") else T
            if name.startswith("tensor."):
                return S if name.split(".", 1)[1] in _SCALAR_METHODS else T
            return self.facts.returns.get(name, T)
        if callee.kind == CLASS:
            return Kind(INSTANCE, callee.name) if callee.name in self.facts.modules else Kind(LAYER)
        if callee.kind == INSTANCE:
            forward = self.facts.find_method(callee.name, "forward")
            return self.facts.returns.get(forward, T) if forward else T
        if callee.scalar:
            # Methods of non-tensors (str.format, dict.get, torch.Size.numel): the result may be an argument.
            return join(S, *args) if args else S
        return T


_CONSTEXPR_PATHS = frozenset({"triton.language.constexpr", "triton.language.core.constexpr"})


def _path_call_kind(path: str) -> Kind:
    """Kind of the value a call through an import returns."""
    parts = path.split(".")
    if parts[0] in ("math", "typing", "functools") or path in ("triton.cdiv", "triton.next_power_of_2",
                                                               "triton.Config"):
        return S
    if parts[0] == "triton":
        return S if "driver" in parts else Kind(FUNC, path)
    if parts[:2] == ["torch", "cuda"] or parts[-1] in ("device", "finfo", "iinfo", "dtype", "Size",
                                                          "get_default_dtype", "is_tensor", "is_floating_point"):
        return S
    if parts[:2] == ["torch", "nn"] and len(parts) == 3 and parts[2][:1].isupper() and parts[2] != "Parameter":
        return Kind(LAYER)
    return T
