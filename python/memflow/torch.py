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
qualified names (``net:fc1:weight``, role parameter); at each optimizer step
the gradients (``net:fc1:weight.grad``, role gradient) before it and the
optimizer's state after it (``adam:net:fc1:weight.exp_avg``, role optimizer
state).  Each step runs in the scope ``<optimizer>.step:`` (``adam.step:``)
and is a mark on the time axis (the optimizer's name, its step number).
Steps are found by wrapping each optimizer's ``step`` when it is created
(torch 1.13 has no global step hooks; 2.x runs the same wrapper).

How: torch's global module hooks (register_module_forward_pre_hook /
register_module_forward_hook, in torch 1.13 and 2.x) push and pop the
scopes; a hook on each module's output tensor marks where its backward
begins.  A module whose forward raised leaves its scope at once where torch
calls the forward hook of such a module (always_call, torch >= 2.1); before
that, at the next module call of its thread (its call frame is no longer on
the stack).
"""
import inspect
import sys
import threading

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
ROLE_PARAMETER, ROLE_GRADIENT, ROLE_OPTIMIZER_STATE = 1, 2, 3
_param_names = {}         # id(parameter) -> its qualified name ("net:fc1:weight")
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
        _memflow.step(kind, count[0])
        params = [p for g in optimizer.param_groups for p in g["params"]]
        for p in params:
            if p.grad is not None:
                _name_tensor(p.grad, _param_name(p) + ".grad", ROLE_GRADIENT)
        _push_whole(kind + ".step")
        try:
            return step(*args, **kwargs)
        finally:
            _pop()
            for p in params:
                for key, value in optimizer.state.get(p, {}).items():
                    if isinstance(value, _torch.Tensor):
                        _name_tensor(value, "%s:%s.%s" % (kind, _param_name(p), key),
                                     ROLE_OPTIMIZER_STATE)

    optimizer.step = step_named


def _optimizer_init_wrapper(init):
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if _handles and "step" not in self.__dict__:
            _wrap_step(self)
    return __init__


def _forward_pre_hook(module, args):
    modules = _thread.modules
    call = _getframe(1)  # Module._call_impl running this module
    while modules:
        parent, frame_id, code = modules[-1]
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
        modules.pop()  # leave the scope of the module that raised
        _pop()
    else:
        name = type(module).__name__.lower()  # a root
        if id(module) not in _named_roots:
            _name_parameters(module, name)
    _push(name)
    modules.append((module, id(call), call.f_code))


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
        modules.pop()
        _pop()
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
    modules.pop()
    _pop()
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


_torch = None
_engine = None
# Whether torch calls forward hooks of a module whose forward raised
# (always_call, torch >= 2.1); set by enable().
HOOK_ON_EXCEPTION = False


def enable():
    """Name every module's forward and backward as a scope (idempotent).

    Raises RuntimeError if this torch has no global module hooks (< 1.13).
    """
    global _torch, _engine, HOOK_ON_EXCEPTION
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
    _handles.append(module_mod.register_module_forward_pre_hook(_forward_pre_hook))
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


def _enable_at_import():
    """Called by memflow run's start-up once the program has imported torch."""
    if not _memflow.torch_scopes():
        return
    try:
        enable()
    except Exception as e:  # never break the program
        sys.stderr.write("memflow: PyTorch module scopes are off: %s\n" % (e,))
