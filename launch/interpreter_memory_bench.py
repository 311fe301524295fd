"""Cost of the interpreter's launch-memory model (kernelgym/judge/interpreter_semantics.py, `_LaunchMemory`):
each named built-in answer's `ModelNew` forward on its task's small inputs, the model on and off (its hooks made
no-ops), interleaved, best of 3; prints both times and whether the outputs are identical. CPU only:
    TRITON_INTERPRET=1 python launch/interpreter_memory_bench.py relu softmax layer_norm matmul_square ..."""
import sys, time, importlib.util, statistics
import torch
from kernelgym.judge.interpreter import make_interpreter_faithful
from kernelgym.judge import interpreter_semantics as sem
from kernelgym.tasks.loaders import resolve_tasks
make_interpreter_faithful()
names = sys.argv[1:]
tasks = {t.task_id: t for t in resolve_tasks("builtin")}
# "off": the model's hooks made no-ops (loads read live memory, stores and atomics record nothing)
HOOKS = ("redirect", "note_store", "acquire", "release")
orig = {h: getattr(sem._LaunchMemory, h) for h in HOOKS}
def off():
    sem._LaunchMemory.redirect = lambda self, p, *a, **k: p
    for h in HOOKS[1:]:
        setattr(sem._LaunchMemory, h, lambda self, *a, **k: None)
def on():
    for h, f in orig.items():
        setattr(sem._LaunchMemory, h, f)
tot = {"on": 0.0, "off": 0.0}
for n in names:
    task = tasks[n]
    spec = importlib.util.spec_from_file_location("answer_" + n, f"data/answers/{n}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    m = task.load_module(size="small")
    torch.manual_seed(0); inputs = m.get_inputs(); init = m.get_init_inputs()
    model = mod.ModelNew(*init)
    res = {"on": [], "off": []}
    outs = {}
    for _ in range(3):
        for mode in ("off", "on"):
            (on if mode == "on" else off)()
            t = time.perf_counter(); outs[mode] = model(*inputs); res[mode].append(time.perf_counter() - t)
    on()
    same = torch.equal(outs["on"], outs["off"]) if isinstance(outs["on"], torch.Tensor) else "?"
    a, b = min(res["off"]), min(res["on"])
    tot["off"] += a; tot["on"] += b
    print(f"{n:28s} off {a*1e3:8.1f} ms  on {b*1e3:8.1f} ms  x{b/a:5.2f}  same output: {same}")
print(f"total off {tot['off']:.2f} s on {tot['on']:.2f} s  x{tot['on']/tot['off']:.2f}")
