"""The plain-values channel between a hidden test (the grader) and the agent's code.

Why: a hidden test that imports the agent's module runs the agent's code in its own process,
which could then write the verdict itself or hand back an object that equals everything. So
the grader process holds the hidden test and the report pipe but no agent code: each agent
module it imports is a `RemoteModule`, and every use of it (attribute, call, item, signature)
is a message to the confined worker that imported the real module. What comes back is JSON
decoded here into built-in values (`None`, bool, int, float, str, list, tuple, dict, set,
Decimal) or an opaque `Remote` handle; every comparison happens here, on those values. The
worker's side can send anything it likes, but only values: to pass, it has to send the right
ones. Exceptions come back as `{"type", "bases", "message"}` and are raised here as the
nearest built-in exception class. Functions of the hidden test passed to agent code (a fake
`subprocess.run`) are called back here with plain arguments.

Loaded by the sandbox supervisor from its path (stdlib only, like `sandbox_child.py`).
"""

from __future__ import annotations

import ast
import builtins
import inspect
import json
import os
import select
import sys
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

MESSAGE_LIMIT = 4_000_000
TEXT_LIMIT = 2_000
IMMUTABLE = (type(None), bool, int, float, str, Decimal)


class AgentUnavailable(Exception):
    """The agent's process ended, broke the protocol or ran out of time: the test errors."""


class NotPlain(TypeError):
    """A value that is not made of built-in plain values."""


# Framing: 8-byte little-endian length, then UTF-8 JSON.


def send(fd: int, message: dict[str, Any]) -> None:
    data = json.dumps(message, allow_nan=True).encode()
    view = memoryview(len(data).to_bytes(8, "little") + data)
    while view:
        view = view[os.write(fd, view) :]


def read_exactly(fd: int, size: int, deadline: float | None) -> bytes:
    chunks: list[bytes] = []
    while size:
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise AgentUnavailable(
                    "the agent's code did not answer within the sandbox's time limit"
                )
        chunk = os.read(fd, min(size, 1 << 20))
        if not chunk:
            raise AgentUnavailable("the agent's process ended before answering")
        chunks.append(chunk)
        size -= len(chunk)
    return b"".join(chunks)


def receive(fd: int, deadline: float | None = None) -> dict[str, Any]:
    size = int.from_bytes(read_exactly(fd, 8, deadline), "little")
    if size > MESSAGE_LIMIT:
        raise AgentUnavailable(f"the agent's process sent a message of {size} bytes")
    try:
        message = json.loads(read_exactly(fd, size, deadline))
    except (ValueError, RecursionError) as exc:
        raise AgentUnavailable(f"the agent's process sent malformed data: {exc}") from None
    if not isinstance(message, dict):
        raise AgentUnavailable("the agent's process sent malformed data: not an object")
    return message


# Plain values: tagged JSON. Both sides encode with `encode` and decode with `decode`.


def encode(value: Any, other: Callable[[Any], dict[str, Any]]) -> Any:
    """`value` as tagged JSON; `other` encodes what is not plain (or raises NotPlain)."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Decimal):
        return {"$decimal": Decimal.__str__(value)}
    if isinstance(value, list):
        return [encode(item, other) for item in list.__iter__(value)]
    if isinstance(value, tuple):
        return {"$tuple": [encode(item, other) for item in tuple.__iter__(value)]}
    if isinstance(value, dict):
        return {"$dict": [[encode(k, other), encode(v, other)] for k, v in dict.items(value)]}
    if isinstance(value, set | frozenset):
        tag = "$set" if isinstance(value, set) else "$frozenset"
        return {tag: [encode(item, other) for item in frozenset(value)]}
    return other(value)


def decode(data: Any, other: Callable[[dict[str, Any]], Any]) -> Any:
    """Only built-in values come out; `other` turns the handle tags into objects."""
    if data is None or type(data) in (bool, int, float, str):
        return data
    if type(data) is list:
        return [decode(item, other) for item in data]
    if type(data) is not dict or len(data) not in (1, 2, 3):
        raise AgentUnavailable("the agent's process sent malformed data: an untagged object")
    if "$decimal" in data and type(data["$decimal"]) is str:
        try:
            return Decimal(data["$decimal"])
        except ArithmeticError:
            raise AgentUnavailable("the agent's process sent a malformed Decimal") from None
    if "$tuple" in data and type(data["$tuple"]) is list:
        return tuple(decode(item, other) for item in data["$tuple"])
    try:
        if "$dict" in data and type(data["$dict"]) is list:
            return {decode(k, other): decode(v, other) for k, v in data["$dict"]}
        if "$set" in data and type(data["$set"]) is list:
            return {decode(item, other) for item in data["$set"]}
        if "$frozenset" in data and type(data["$frozenset"]) is list:
            return frozenset(decode(item, other) for item in data["$frozenset"])
    except (TypeError, ValueError):
        raise AgentUnavailable("the agent's process sent malformed data") from None
    return other(data)


def describe_exception(exc: BaseException) -> dict[str, Any]:
    bases = [c.__name__ for c in type(exc).__mro__ if getattr(builtins, c.__name__, None) is c]
    try:
        message = str(exc)[:TEXT_LIMIT]
    except BaseException:
        message = "<unprintable>"
    return {"type": type(exc).__name__[:200], "bases": bases, "message": message}


def rebuild_exception(data: Any) -> Exception:
    """The nearest built-in `Exception` class of what the agent's code raised, made here."""
    if type(data) is not dict or type(data.get("message")) is not str:
        return AgentUnavailable("the agent's process sent a malformed exception")
    name, message = str(data.get("type", "Exception")), data["message"]
    bases = data.get("bases")
    for base_name in bases if isinstance(bases, list) else []:
        base = getattr(builtins, base_name, None) if type(base_name) is str else None
        if isinstance(base, type) and issubclass(base, Exception):
            if base.__name__ == name:
                return base(message)
            return type(name, (base,), {"__module__": "agent"})(message)
    return RuntimeError(f"the agent's code raised {name}: {message}")


# The grader's side.


class Link:
    """The grader's end: requests out, plain values in, callbacks run here."""

    def __init__(self, outbox: int, inbox: int, deadline: float) -> None:
        self.outbox, self.inbox, self.deadline = outbox, inbox, deadline
        self.broken: str | None = None
        self.callbacks: list[Callable[..., Any]] = []

    def request(self, target: dict[str, Any], **message: Any) -> Any:
        """One operation on `target` (a handle's tag), its arguments sent as plain values."""
        if self.broken is not None:
            raise AgentUnavailable(self.broken)
        try:
            encoded = {k: self._encode(v) for k, v in message.items()}
            send(self.outbox, {**encoded, "target": target})
            while True:
                reply = receive(self.inbox, self.deadline)
                if "callback" in reply:
                    self._run_callback(reply)
                    continue
                if "raise" in reply:
                    raise rebuild_exception(reply["raise"])
                if "ok" in reply:
                    return decode(reply["ok"], self._handle)
                raise AgentUnavailable("the agent's process sent malformed data: no result")
        except AgentUnavailable as exc:
            self.broken = str(exc)
            raise
        except OSError as exc:
            self.broken = f"the agent's process is unreachable: {exc}"
            raise AgentUnavailable(self.broken) from None

    def _run_callback(self, reply: dict[str, Any]) -> None:
        index = reply["callback"]
        if type(index) is not int or not 0 <= index < len(self.callbacks):
            raise AgentUnavailable("the agent's process called back a function it was not given")
        args = decode(reply.get("args", {"$tuple": []}), self._handle)
        kwargs = decode(reply.get("kwargs", {"$dict": []}), self._handle)
        if type(args) is not tuple or type(kwargs) is not dict:
            raise AgentUnavailable("the agent's process sent malformed call arguments")
        try:
            result = self.callbacks[index](*args, **{str(k): v for k, v in kwargs.items()})
            send(self.outbox, {"ok": self._encode(result)})
        except AgentUnavailable:
            raise
        except Exception as exc:
            send(self.outbox, {"raise": describe_exception(exc)})

    def _encode(self, value: Any) -> Any:
        return encode(value, self._other)

    def _other(self, value: Any) -> dict[str, Any]:
        if isinstance(value, Remote):
            return value._spec
        if callable(value):
            self.callbacks.append(value)
            return {"$callback": len(self.callbacks) - 1}
        raise NotPlain(f"a hidden test cannot pass {type(value).__name__} to the agent's code")

    def _handle(self, data: dict[str, Any]) -> Remote:
        ref = data.get("$ref")
        if type(ref) is not int:
            raise AgentUnavailable("the agent's process sent malformed data: an unknown tag")
        kind = data.get("type")
        return Remote(self, {"$ref": ref}, kind if type(kind) is str else "object")


_NO_VALUE = object()


class Remote:
    """An object that lives in the agent's process. Nothing it does runs agent code here:
    equality, truth and iteration use the plain value the agent's process sends, if any."""

    __slots__ = ("_definition", "_kind", "_link", "_spec")

    def __init__(self, link: Link, spec: dict[str, Any], kind: str) -> None:
        object.__setattr__(self, "_link", link)
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "_kind", kind)
        object.__setattr__(self, "_definition", None)  # the def in the agent's source, if any

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__"):
            raise AttributeError(name)
        return self._link.request(self._spec, op="getattr", name=name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._link.request(self._spec, op="setattr", name=name, value=value)

    def __delattr__(self, name: str) -> None:
        self._link.request(self._spec, op="delattr", name=name)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._link.request(self._spec, op="call", args=args, kwargs=kwargs)

    def __getitem__(self, key: Any) -> Any:
        return self._link.request(self._spec, op="getitem", key=key)

    def __setitem__(self, key: Any, value: Any) -> None:
        self._link.request(self._spec, op="setitem", key=key, value=value)

    def __delitem__(self, key: Any) -> None:
        self._link.request(self._spec, op="delitem", key=key)

    def _value(self) -> Any:
        value = self._link.request(self._spec, op="value")
        return _NO_VALUE if isinstance(value, Remote) else value

    def __eq__(self, other: object) -> bool:
        value = self._value()
        return self is other if value is _NO_VALUE else bool(value == other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        value = self._value()
        return True if value is _NO_VALUE else bool(value)

    def __iter__(self) -> Iterator[Any]:
        value = self._value()
        if value is _NO_VALUE:
            raise TypeError(f"the agent's {self._kind} is not a plain value")
        return iter(value)

    def __len__(self) -> int:
        return len(list(self.__iter__()))

    def __contains__(self, item: object) -> bool:
        return item in list(self.__iter__())

    @property
    def __signature__(self) -> inspect.Signature:
        """Read from the agent's source when this is one of its module's functions (the agent's
        process could patch `inspect` to answer anything); asked of the agent otherwise."""
        if self._definition is not None:
            return static_signature(self._definition)
        found = self._link.request(self._spec, op="signature")
        parameters = []
        for item in found if type(found) is list else []:
            if type(item) is not list or len(item) != 3 or type(item[0]) is not str:
                raise AgentUnavailable("the agent's process sent a malformed signature")
            kind = getattr(inspect.Parameter, str(item[1]), None)
            if not isinstance(kind, inspect._ParameterKind):
                raise AgentUnavailable("the agent's process sent a malformed signature")
            default = "<default>" if item[2] is True else inspect.Parameter.empty
            parameters.append(inspect.Parameter(item[0], kind, default=default))
        try:
            return inspect.Signature(parameters)
        except (ValueError, TypeError) as exc:
            raise AgentUnavailable(
                f"the agent's process sent a malformed signature: {exc}"
            ) from None

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        """What `vars()` sees: the names the agent's object defines, each a lazy handle."""
        names = self._link.request(self._spec, op="names")
        if type(names) is not list:
            raise AgentUnavailable("the agent's process sent malformed names")
        return {str(name): _LazyAttribute(self, str(name)) for name in names}

    def __repr__(self) -> str:
        return f"<agent {self._kind} {self._spec}>"


class _LazyAttribute:
    def __init__(self, owner: Remote, name: str) -> None:
        self.owner, self.name = owner, name

    def __repr__(self) -> str:
        return f"<agent attribute {self.name}>"


class RemoteModule(Remote):
    """One of the agent's modules, imported in the agent's process on first use. What its
    source says (the names it binds, its functions' signatures) is read here from the text,
    which is parsed, never run."""

    __slots__ = ("_source", "_submodules")

    def __init__(self, link: Link, name: str, modules: set[str], source: str | None) -> None:
        super().__init__(link, {"$module": name}, "module")
        object.__setattr__(self, "_submodules", modules)
        object.__setattr__(self, "_source", _parse(source))

    def __getattr__(self, name: str) -> Any:
        full = f"{self._spec['$module']}.{name}"
        if full in self._submodules and not (name.startswith("__") and name.endswith("__")):
            known = sys.modules.get(full)
            if isinstance(known, RemoteModule):
                return known
            return RemoteModule(self._link, full, self._submodules, None)
        value = super().__getattr__(name)
        if isinstance(value, Remote) and self._source is not None:
            definitions = [
                node
                for node in self._source.body
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name
            ]
            object.__setattr__(value, "_definition", definitions[-1] if definitions else None)
        return value

    @property
    def __dict__(self) -> dict[str, Any]:  # type: ignore[override]
        """What `vars()` sees: the names the module's source binds at its top level."""
        if self._source is None:
            return super().__dict__
        return {name: _LazyAttribute(self, name) for name in static_names(self._source.body)}


def _parse(source: str | None) -> ast.Module | None:
    try:
        return None if source is None else ast.parse(source)
    except (SyntaxError, ValueError):
        return None


def static_names(body: list[ast.stmt]) -> list[str]:
    """Names bound by a module's top-level statements (not inside functions or classes)."""
    names: list[str] = []

    def bind(target: ast.AST) -> None:
        names.extend(n.id for n in ast.walk(target) if isinstance(n, ast.Name))

    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.append(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.extend(
                alias.asname or alias.name.split(".")[0]
                for alias in node.names
                if alias.name != "*"
            )
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                bind(target)
        elif isinstance(node, ast.AnnAssign | ast.AugAssign | ast.For | ast.AsyncFor):
            bind(node.target)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                if item.optional_vars is not None:
                    bind(item.optional_vars)
        if isinstance(node, ast.If | ast.For | ast.AsyncFor | ast.While | ast.With | ast.AsyncWith):
            names.extend(static_names(node.body))
            names.extend(static_names(getattr(node, "orelse", [])))
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                names.extend(static_names(block))
            for handler in node.handlers:
                names.extend([handler.name] if handler.name else [])
                names.extend(static_names(handler.body))
    return list(dict.fromkeys(names))


def static_signature(node: ast.FunctionDef | ast.AsyncFunctionDef) -> inspect.Signature:
    """The signature a `def` declares (defaults shown as a placeholder: they are not run)."""
    P = inspect.Parameter
    args = node.args
    positional = [*args.posonlyargs, *args.args]
    first_default = len(positional) - len(args.defaults)
    parameters = [
        P(
            arg.arg,
            P.POSITIONAL_ONLY if index < len(args.posonlyargs) else P.POSITIONAL_OR_KEYWORD,
            default="<default>" if index >= first_default else P.empty,
        )
        for index, arg in enumerate(positional)
    ]
    if args.vararg is not None:
        parameters.append(P(args.vararg.arg, P.VAR_POSITIONAL))
    parameters.extend(
        P(arg.arg, P.KEYWORD_ONLY, default=P.empty if default is None else "<default>")
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True)
    )
    if args.kwarg is not None:
        parameters.append(P(args.kwarg.arg, P.VAR_KEYWORD))
    return inspect.Signature(parameters)


# The agent's side.


def serve(inbox: int, outbox: int, load: Callable[[str], Any], modules: set[str]) -> None:
    """The worker's loop: every request answered with plain values or a handle."""
    refs: list[Any] = []

    def handle(value: Any) -> dict[str, Any]:
        refs.append(value)
        return {"$ref": len(refs) - 1, "type": type(value).__name__[:200]}

    def resolve(data: dict[str, Any]) -> Any:
        if "$module" in data and data["$module"] in modules:
            return load(data["$module"])
        if "$ref" in data and type(data["$ref"]) is int and 0 <= data["$ref"] < len(refs):
            return refs[data["$ref"]]
        if "$callback" in data and type(data["$callback"]) is int:
            return _callback(data["$callback"])
        raise AgentUnavailable(f"unknown handle {data!r}")

    def _callback(index: int) -> Callable[..., Any]:
        def call_grader(*args: Any, **kwargs: Any) -> Any:
            send(outbox, {"callback": index, "args": as_value(args), "kwargs": as_value(kwargs)})
            reply = receive(inbox)
            if "raise" in reply:
                raise rebuild_exception(reply["raise"])
            return decode(reply.get("ok"), resolve)

        return call_grader

    def as_value(value: Any) -> Any:
        return encode(value, handle)

    def not_plain(value: Any) -> dict[str, Any]:
        raise NotPlain(type(value).__name__)

    def attribute(value: Any) -> Any:
        """Immutable values are sent; containers stay in the agent's process as handles, so
        that `settings.SECRETS[key] = value` changes the agent's own dict."""
        if isinstance(value, IMMUTABLE) or (
            isinstance(value, tuple) and all(isinstance(v, IMMUTABLE) for v in value)
        ):
            return as_value(value)
        return handle(value)

    def answer(message: dict[str, Any]) -> Any:
        op = message.get("op")
        target = decode(message.get("target"), resolve)
        if op == "getattr":
            return attribute(getattr(target, str(message["name"])))
        if op == "setattr":
            setattr(target, str(message["name"]), decode(message["value"], resolve))
            return None
        if op == "delattr":
            delattr(target, str(message["name"]))
            return None
        if op == "call":
            args = decode(message["args"], resolve)
            kwargs = decode(message["kwargs"], resolve)
            return as_value(target(*args, **{str(k): v for k, v in kwargs.items()}))
        if op == "getitem":
            return as_value(target[decode(message["key"], resolve)])
        if op == "setitem":
            target[decode(message["key"], resolve)] = decode(message["value"], resolve)
            return None
        if op == "delitem":
            del target[decode(message["key"], resolve)]
            return None
        if op == "value":
            try:
                return encode(target, not_plain)
            except NotPlain:
                return handle(target)
        if op == "signature":
            return [
                [p.name, p.kind.name, p.default is not p.empty]
                for p in inspect.signature(target).parameters.values()
            ]
        if op == "names":
            return [str(name) for name in vars(target)]
        raise AgentUnavailable(f"unknown operation {op!r}")

    while True:
        try:
            message = receive(inbox)
        except AgentUnavailable:
            return
        try:
            reply: dict[str, Any] = {"ok": answer(message)}
        except BaseException as exc:  # the agent's exception, sent as a description
            reply = {"raise": describe_exception(exc)}
        send(outbox, reply)
