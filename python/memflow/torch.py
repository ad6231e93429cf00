"""memflow.torch - PyTorch modules as memflow scopes, with no change to the model.

After ``memflow.torch.enable()`` (which ``memflow run`` does by itself when
the program imports torch, unless the configuration key torch_scopes is
off), every ``nn.Module``'s forward runs in a scope named by its attribute
path, in append mode: model ``Net`` with child ``dense0`` gives ``net:`` and
``net:dense0:`` (the root is the class name in lower case; a child is
named by its attribute in the module that calls it).  Every allocation made
inside - CPU tensors through the malloc family, GPU memory through CUPTI,
where the caching allocator's segment growth lands on the module that
caused it - carries the scope.

Backward: when the gradient of a module's output is ready, the autograd
engine is about to run that module's backward; from then on the thread's
scope is ``backward:`` + the module's scope (``backward:net:dense0:``) until
the next module's turn, and the end of the backward pass restores it.

Tensors get names and roles (a naming record on the block at the tensor's
address): at a root module's first forward its parameters are named by their
qualified names (``net:fc1:weight``, role parameter); at each root forward
the tensors it receives (``net:input.0``, role input); while a root module's
forward runs, every tensor autograd saves for backward
(``net:fc1:activation``, role activation: a saved-tensors hook); gradients
(``net:fc1:weight.grad``, role gradient) when each is accumulated (torch >=
2.1: a post-accumulate-grad hook per parameter), else at the end of each
backward pass and before each optimizer step; the optimizer's state after
each step (``adam:net:fc1:weight.exp_avg``, role optimizer state).  Each
step runs in the scope ``<optimizer>.step:`` (``adam.step:``) and is a mark
on the time axis (the optimizer's name, its step number).  Steps are found
by torch's global optimizer step hooks (torch >= 2.0), else by wrapping each
optimizer's ``step`` when it is created (torch 1.13).  Temporaries and other
tensors are told apart by the analysis (docs/PYTHON.md).

How: torch's global module hooks (register_module_forward_pre_hook /
register_module_forward_hook, in torch 1.13 and 2.x) push and pop the
scopes; a hook on each module's output tensor marks where its backward
begins.  A module whose forward raised leaves its scope at once where torch
calls the forward hook of such a module (always_call, torch >= 2.1); before
that, at the next module call of its thread (its call frame is no longer on
the stack).
"""
import functools
import inspect
import sys
import threading
import weakref

from . import _memflow

__all__ = ["enable", "disable", "enabled"]

_push = _memflow.scope_push  # appended to the current scope
_push_whole = _memflow.scope_push_whole
_pop = _memflow.scope_pop
_getframe = sys._getframe

_handles = []             # the global hook handles while enabled
_names = {}               # id(module) -> its attribute name in the module that ran it
_NAMES_MAX = 100000


class _ThreadState(threading.local):
    """Per thread: the modules running, [(module, id of its call frame, the
    frame's code)], innermost last; whether a backward scope is pushed."""

    def __init__(self):
        self.modules = []
        self.backward_pushed = False
        self.seen = set()     # data_ptr of the running root forward's inputs and of
                              # the activations it named (the first name stays)


_thread = _ThreadState()


def _child_name(parent, module):
    """module's name as called from parent's forward: its attribute name
    ('dense0'), a deeper attribute path ('block:dense0'), or its class."""
    children = parent._modules
    for name, child in children.items():
        if child is module:
            if len(_names) >= _NAMES_MAX:
                _names.clear()
            _names[id(module)] = name
            return name
    for name, child in parent.named_modules():
        if child is module and name:
            return name.replace(".", ":")
    return type(module).__name__.lower()


# ---- tensor names and roles ------------------------------------------------
ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE, ROLE_ACTIVATION, ROLE_INPUT = 1, 2, 3, 4, 5
_param_names = {}         # id(parameter) -> its qualified name ("net:fc1:weight")
_param_ptrs = set()       # data_ptr of named parameters (never named as activations)
_params = {}              # id(parameter) -> a weak reference to it, for its gradient
_named_roots = set()      # id(root module) whose parameters are named


def _device_code(t):
    d = t.device
    return 0 if d.type == "cpu" else 0x100 | (d.index or 0)


def _name_tensor(t, name, role):
    if t.numel():
        _memflow.name_block(_device_code(t), t.data_ptr(), name, role)


def _name_parameters(root, root_name):
    """Name every parameter of a root module by its qualified name, once."""
    if id(root) in _named_roots:
        return
    _named_roots.add(id(root))
    for name, p in root.named_parameters():
        full = root_name + ":" + name.replace(".", ":")
        _param_names[id(p)] = full
        _name_tensor(p, full, ROLE_PARAMETER)
        ptr = p.data_ptr() if p.numel() else None
        if ptr is not None:
            _param_ptrs.add(ptr)
        _params[id(p)] = weakref.ref(p, _forget_parameter(id(p), ptr))
        if _GRAD_HOOKS and p.requires_grad:
            p.register_post_accumulate_grad_hook(_grad_accumulated)


def _forget_parameter(key, ptr):
    def forget(_):
        _params.pop(key, None)
        _param_names.pop(key, None)
        _param_ptrs.discard(ptr)
    return forget


def _grad_accumulated(p):
    """torch >= 2.1: p's gradient was just accumulated."""
    if p.grad is not None:
        _name_tensor(p.grad, _param_name(p) + ".grad", ROLE_GRADIENT)


def _name_gradients(params):
    for p in params:
        if p.grad is not None:
            _name_tensor(p.grad, _param_name(p) + ".grad", ROLE_GRADIENT)


def _name_inputs(root_name, args):
    """The tensors a root module's forward receives (positional arguments,
    and tensors in a list, tuple or dict among them)."""
    seen = _thread.seen
    seen.clear()
    i = 0
    for a in args:
        items = a.values() if isinstance(a, dict) else a if isinstance(a, (list, tuple)) else (a,)
        for t in items:
            if isinstance(t, _torch.Tensor) and t.numel() and t.layout == _torch.strided:
                _name_tensor(t, "%s:input.%d" % (root_name, i), ROLE_INPUT)
                seen.add(t.data_ptr())
                i += 1


def _pack_saved(t):
    """Saved-tensors hook: a tensor autograd keeps for backward is an
    activation, named in the scope that first saves it, unless it is a
    parameter or an input.  Returns a detached alias (the same memory;
    holding t itself would make a reference cycle)."""
    if t.layout == _torch.strided and t.numel():
        ptr = t.data_ptr()
        seen = _thread.seen
        if ptr not in _param_ptrs and ptr not in seen:
            seen.add(ptr)
            _memflow.name_block(_device_code(t), ptr, _memflow.current_scope() + "activation",
                                ROLE_ACTIVATION)
    return t.detach()


def _unpack_saved(t):
    return t


def _param_name(p):
    return _param_names.get(id(p), "param%d" % id(p))


def _wrap_step(optimizer):
    """Run optimizer.step in its own scope, a mark at each step, naming the
    gradients before and the optimizer's state after."""
    step = optimizer.step
    kind = type(optimizer).__name__.lower()
    count = [0]

    def step_named(*args, **kwargs):
        count[0] += 1
        params = _step_begins(optimizer, kind, count[0])
        try:
            return step(*args, **kwargs)
        finally:
            _step_ends(optimizer, kind, params)

    optimizer.step = step_named


def _step_begins(optimizer, kind, number):
    """An optimizer step begins: a mark, its gradients named, its scope."""
    _memflow.step(kind, number)
    params = [p for g in optimizer.param_groups for p in g["params"]]
    _name_gradients(params)
    _push_whole(kind + ".step")
    return params


def _step_ends(optimizer, kind, params):
    """An optimizer step ended: its scope left, its state named."""
    _pop()
    for p in params:
        for key, value in optimizer.state.get(p, {}).items():
            if isinstance(value, _torch.Tensor):
                _name_tensor(value, "%s:%s.%s" % (kind, _param_name(p), key),
                             ROLE_OPTIMIZER_STATE)


_steps = {}   # torch >= 2.0: id(optimizer) -> [its steps, its params while one runs]


def _global_step_pre_hook(optimizer, args, kwargs):
    state = _steps.setdefault(id(optimizer), [0, None])
    if state[1] is not None:   # the last step raised: its scope is still pushed
        _pop()
    state[0] += 1
    state[1] = _step_begins(optimizer, type(optimizer).__name__.lower(), state[0])


def _global_step_post_hook(optimizer, args, kwargs):
    state = _steps.get(id(optimizer))
    if state is not None and state[1] is not None:
        params, state[1] = state[1], None
        _step_ends(optimizer, type(optimizer).__name__.lower(), params)


def _optimizer_init_wrapper(init):
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if _handles and "step" not in self.__dict__:
            _wrap_step(self)
    return __init__


def _leave(modules):
    """Leave the innermost running module's scope (and, a root, the
    saved-tensors hooks its forward pushed)."""
    hooks = modules.pop()[3]
    _pop()
    if hooks is not None:
        _thread.seen.clear()
        hooks.__exit__(None, None, None)


def _forward_pre_hook(module, args):
    modules = _thread.modules
    call = _getframe(1)  # Module._call_impl running this module
    hooks = None
    while modules:
        parent, frame_id, code, _ = modules[-1]
        # Is the innermost running module's call below this one?  (Two or
        # three frames up, normally.)  If not, its forward raised.
        frame = call.f_back
        while frame is not None and (id(frame) != frame_id or frame.f_code is not code):
            frame = frame.f_back
        if frame is not None:
            name = _names.get(id(module))
            if name is None or parent._modules.get(name) is not module:
                name = _child_name(parent, module)
            break
        _leave(modules)  # leave the scope of the module that raised
    else:
        name = type(module).__name__.lower()  # a root
        if id(module) not in _named_roots:
            _name_parameters(module, name)
        _name_inputs(name, args)
        if _torch.is_grad_enabled():
            hooks = _saved_tensors_hooks(_pack_saved, _unpack_saved)
            hooks.__enter__()
    _push(name)
    modules.append((module, id(call), call.f_code, hooks))


def _leave_raised_children(modules, module, call_id):
    """Pop the modules above module's own entry (children whose forward
    raised and were caught by module's).  False if module has no entry (its
    pre-hook did not run: enabled during its forward)."""
    for depth in range(len(modules) - 1, -1, -1):
        if modules[depth][0] is module and modules[depth][1] == call_id:
            break
    else:
        return False
    while len(modules) > depth + 1:
        _leave(modules)
    return True


def _forward_hook(module, args, output):
    modules = _thread.modules
    if not modules:
        return None
    top = modules[-1]
    if (top[0] is not module or top[1] != id(_getframe(1))) and \
            not _leave_raised_children(modules, module, id(_getframe(1))):
        return None
    if _torch.is_grad_enabled():
        _mark_backward(output, "backward:" + _memflow.current_scope())
    _leave(modules)
    return None


def _mark_backward(output, scope):
    """Hook the module's output tensors: their gradient starts its backward."""
    if isinstance(output, _torch.Tensor):
        marks = output.__dict__
        if output.requires_grad and "_memflow_backward" not in marks:
            # the innermost module that returned this tensor names its backward
            marks["_memflow_backward"] = scope
            output.register_hook(_backward_starter(scope))
    elif isinstance(output, (tuple, list)):
        for item in output:
            if isinstance(item, _torch.Tensor):
                _mark_backward(item, scope)
    elif isinstance(output, dict):
        for item in output.values():
            if isinstance(item, _torch.Tensor):
                _mark_backward(item, scope)


def _backward_starter(scope):
    def start_backward_scope(grad):
        state = _thread
        if state.backward_pushed:
            _pop()
        else:
            try:  # the end of this backward pass leaves the scope
                _engine.queue_callback(_end_backward_scope)
            except RuntimeError:  # no pass to end: no scope, never a failed backward
                return None
            state.backward_pushed = True
        _push_whole(scope)
        return None
    return start_backward_scope


def _end_backward_scope():
    state = _thread
    if state.backward_pushed:
        state.backward_pushed = False
        _pop()
        if not _GRAD_HOOKS:  # the gradients of this pass, named where no hook did
            _name_gradients([p for p in (r() for r in list(_params.values())) if p is not None])


_torch = None
_engine = None
_saved_tensors_hooks = None
# Whether torch calls forward hooks of a module whose forward raised
# (always_call, torch >= 2.1); set by enable().
HOOK_ON_EXCEPTION = False
# Whether parameters take post-accumulate-grad hooks (torch >= 2.1).
_GRAD_HOOKS = False


def enable():
    """Name every module's forward and backward as a scope (idempotent).

    Raises RuntimeError if this torch has no global module hooks (< 1.13).
    """
    global _torch, _engine, _saved_tensors_hooks, HOOK_ON_EXCEPTION, _GRAD_HOOKS
    if _handles:
        return
    import torch
    from torch.nn.modules import module as module_mod
    if not hasattr(module_mod, "register_module_forward_pre_hook"):
        raise RuntimeError("memflow.torch: torch %s has no global module hooks "
                           "(torch >= 1.13 has them)" % torch.__version__)
    HOOK_ON_EXCEPTION = "always_call" in inspect.signature(
        module_mod.register_module_forward_hook).parameters
    _torch = torch
    _engine = torch.autograd.Variable._execution_engine
    _saved_tensors_hooks = torch.autograd.graph.saved_tensors_hooks
    _GRAD_HOOKS = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
    _handles.append(module_mod.register_module_forward_pre_hook(_forward_pre_hook))
    from torch.optim import optimizer as optim_mod
    if hasattr(optim_mod, "register_optimizer_step_pre_hook"):  # torch >= 2.0
        _handles.append(optim_mod.register_optimizer_step_pre_hook(_global_step_pre_hook))
        _handles.append(optim_mod.register_optimizer_step_post_hook(_global_step_post_hook))
    else:
        optimizer_cls = torch.optim.Optimizer
        if not getattr(optimizer_cls.__init__, "_memflow", False):
            wrapped = _optimizer_init_wrapper(optimizer_cls.__init__)
            wrapped._memflow = True
            optimizer_cls.__init__ = wrapped
    if HOOK_ON_EXCEPTION:
        _handles.append(module_mod.register_module_forward_hook(_forward_hook,
                                                                always_call=True))
    else:
        _handles.append(module_mod.register_module_forward_hook(_forward_hook))


def disable():
    """Stop naming modules (modules running now keep their scopes until they return)."""
    while _handles:
        _handles.pop().remove()


def enabled():
    """Whether module scopes are on."""
    return bool(_handles)


_profiler_told = False


def _profiler_starts(profile):
    """torch.profiler is about to set up Kineto: with CUDA activities while
    memflow's GPU capture holds CUPTI, say once (stderr and a NOTE) that it
    will record no CUDA kernels, and how to leave CUPTI to it."""
    global _profiler_told
    if _profiler_told or not _memflow.gpu_capture_on():
        return
    if _torch.profiler.ProfilerActivity.CUDA not in getattr(profile, "kineto_activities", ()):
        return
    _profiler_told = True
    sys.stderr.write("memflow: torch.profiler asked for CUDA activities, but memflow's GPU "
                     "capture holds CUPTI (one client per process before CUDA 13.2), so "
                     "torch.profiler records no CUDA kernels; `memflow run --set cupti=0` "
                     "leaves CUPTI to it (PyTorch's GPU memory then comes from its "
                     "allocator's history)\n")
    from .torch_history import NOTE_PROFILER_NO_CUDA
    _memflow.torch_history_note(NOTE_PROFILER_NO_CUDA, 0)


def _watch_profiler():
    """Wrap torch.autograd.profiler.profile._prepare_trace (torch 1.13 and
    2.x; torch.profiler.profile goes through it) with _profiler_starts."""
    global _torch
    import torch
    from torch.autograd import profiler as autograd_profiler
    _torch = torch
    cls = autograd_profiler.profile
    prepare = getattr(cls, "_prepare_trace", None)
    if prepare is None or getattr(prepare, "_memflow", False):
        return

    @functools.wraps(prepare)
    def _prepare_trace(self, *args, **kwargs):
        try:
            _profiler_starts(self)
        except Exception:  # never break the program
            pass
        return prepare(self, *args, **kwargs)
    _prepare_trace._memflow = True
    cls._prepare_trace = _prepare_trace


def _enable_at_import():
    """Called by memflow run's start-up once the program has imported torch:
    torch.profiler's start watched, the allocator history
    (memflow.torch_history), then the module scopes."""
    from . import torch_history
    try:
        _watch_profiler()
    except Exception as e:  # never break the program
        sys.stderr.write("memflow: torch.profiler is not watched: %s\n" % (e,))
    torch_history.arm()
    if not _memflow.torch_scopes():
        return
    try:
        enable()
    except Exception as e:  # never break the program
        sys.stderr.write("memflow: PyTorch module scopes are off: %s\n" % (e,))
