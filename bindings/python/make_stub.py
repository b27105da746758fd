#!/usr/bin/env python3
"""Writes the type stub of the uniffi-generated module: `gatehouse_ffi.py` -> `gatehouse_ffi.pyi`.

Run by `cargo xtask bindings` right after uniffi-bindgen (the stub is committed beside the
module and `--check`ed with it):

    python3 bindings/python/make_stub.py GENERATED.py OUT.pyi

Why a stub: uniffi's Python is annotated, but it builds two kinds of classes at run time,
which type checkers cannot follow:
- an enum with data (`Checkpoint`): each variant is a nested class made a subclass of the
  enum afterwards (`Checkpoint.PRE_STEP = type(..., (Checkpoint.PRE_STEP, Checkpoint), {})`),
  so a checker sees `Checkpoint.PRE_STEP()` as not a `Checkpoint`;
- an error (`GatehouseError`): the class is defined twice and its variants are attached by
  assignment, so a checker sees no `GatehouseError.AlreadyAnswered`, and the variants'
  fields (`msg`, `details`) have no annotations.
The stub declares what exists at run time: variants as nested subclasses of their enum or
error (with the properties the package's `__init__.py` adds to an error,
`FACADE_ERROR_PROPERTIES`), every field with its type (an error field's type is read from its converter's
`check_lower`), and the public records, objects, protocols and functions with the
generated signatures. Private names (`_Uniffi...`) are left out.

Standard library only (ast), Python 3.9+. Fails, naming the construct, on anything it does
not recognise, so a uniffi upgrade that changes the generated shapes cannot go unnoticed.
"""

from __future__ import annotations

import ast
import sys

HEADER = (
    "# The type stub of gatehouse_ffi.py, written by bindings/python/make_stub.py\n"
    "# (`cargo xtask bindings`): do not edit.\n"
    "\n"
    "import asyncio\n"
    "import datetime\n"
    "import enum\n"
    "import typing\n"
)

# uniffi's converter class names (`_UniffiFfiConverter<Type>`) -> the Python type; the
# wrappers `Optional<T>` and `Sequence<T>` are read recursively.
SCALAR_CONVERTERS = {
    "String": "str",
    "Boolean": "bool",
    "Bytes": "bytes",
    "Float32": "float",
    "Float64": "float",
    "Int8": "int",
    "Int16": "int",
    "Int32": "int",
    "Int64": "int",
    "UInt8": "int",
    "UInt16": "int",
    "UInt32": "int",
    "UInt64": "int",
    "Duration": "datetime.timedelta",
    "Timestamp": "datetime.datetime",
}
CONVERTER_PREFIX = "_UniffiFfiConverter"


class StubError(Exception):
    """The generated module has a shape this script does not know."""


def converter_type(name: str) -> str:
    """`OptionalTypeInteraction` -> `typing.Optional[Interaction]`."""
    if name in SCALAR_CONVERTERS:
        return SCALAR_CONVERTERS[name]
    if name.startswith("Optional"):
        return f"typing.Optional[{converter_type(name[len('Optional'):])}]"
    if name.startswith("Sequence"):
        return f"typing.List[{converter_type(name[len('Sequence'):])}]"
    if name.startswith("Type") and name[len("Type") :].isidentifier():
        return name[len("Type") :]
    raise StubError(f"unknown converter {CONVERTER_PREFIX}{name}: add it to make_stub.py")


def is_public(name: str) -> bool:
    return not name.startswith("_")


def docstring_lines(node: ast.AST, indent: str) -> list[str]:
    text = ast.get_docstring(node)  # type: ignore[arg-type]
    if not text:
        return []
    if '"""' in text or text.endswith("\\"):
        raise StubError(f"a docstring make_stub.py cannot quote: {text[:60]!r}")
    lines = text.split("\n")
    if len(lines) == 1 and not text.endswith('"'):
        return [f'{indent}"""{text}"""']
    body = [f"{indent}{line}" if line else "" for line in lines]
    return [f'{indent}"""{body[0].lstrip()}', *body[1:], f'{indent}"""']


def signature(function: ast.FunctionDef | ast.AsyncFunctionDef, field_types: dict[str, str] | None = None) -> str:
    """The parameters and return annotation, with every default written `...`.
    `field_types` annotates parameters the generated code left bare (error fields)."""
    args = function.args
    if args.vararg or args.kwarg or args.posonlyargs:
        if function.name == "__init__":
            return "(self, *args: typing.Any, **kwargs: typing.Any) -> None"
        raise StubError(f"{function.name}: *args/**kwargs/positional-only parameters")

    def parameter(arg: ast.arg, default: ast.expr | None) -> str:
        text = arg.arg
        if arg.annotation is not None:
            text += f": {ast.unparse(arg.annotation)}"
        elif field_types is not None and arg.arg in field_types:
            text += f": {field_types[arg.arg]}"
        elif arg.arg not in ("self", "cls"):
            raise StubError(f"{function.name}: parameter {arg.arg} has no type")
        if default is not None:
            text += " = ..."
        return text

    positional = args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    parts = [parameter(arg, default) for arg, default in zip(positional, defaults)]
    if args.kwonlyargs:
        parts.append("*")
        parts += [parameter(arg, default) for arg, default in zip(args.kwonlyargs, args.kw_defaults)]
    if function.returns is not None:
        returns = ast.unparse(function.returns)
    elif function.name == "__init__" or not any(
        isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function)
    ):
        returns = "None"
    else:
        raise StubError(f"{function.name} returns a value but has no return annotation")
    return f"({', '.join(parts)}) -> {returns}"


def function_lines(function: ast.FunctionDef | ast.AsyncFunctionDef, indent: str, field_types: dict[str, str] | None = None) -> list[str]:
    prefix = "async def" if isinstance(function, ast.AsyncFunctionDef) else "def"
    lines = []
    for decorator in function.decorator_list:
        name = ast.unparse(decorator)
        if name not in ("staticmethod", "classmethod"):
            raise StubError(f"{function.name}: decorator @{name}")
        lines.append(f"{indent}@{name}")
    lines.append(f"{indent}{prefix} {function.name}{signature(function, field_types)}:")
    lines += docstring_lines(function, indent + "    ") or []
    lines.append(f"{indent}    ...")
    return lines


def init_fields(init: ast.FunctionDef, field_types: dict[str, str] | None) -> list[tuple[str, str]]:
    """`self.name = name` in `__init__` -> (name, the parameter's type)."""
    annotations = {}
    for arg in init.args.args + init.args.kwonlyargs:
        if arg.annotation is not None:
            annotations[arg.arg] = ast.unparse(arg.annotation)
        elif field_types is not None and arg.arg in field_types:
            annotations[arg.arg] = field_types[arg.arg]
    fields = []
    for node in init.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == "self"
            and isinstance(node.value, ast.Name)
        ):
            name, source = node.targets[0].attr, node.value.id
            if not is_public(name):
                continue
            if source not in annotations:
                raise StubError(f"field {name} has no type")
            fields.append((name, annotations[source]))
    return fields


def only_raises(function: ast.FunctionDef) -> bool:
    """`__init__` of an enum or an object without a constructor: it only raises."""
    body = [n for n in function.body if not (isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def class_body_lines(
    cls: ast.ClassDef,
    indent: str,
    field_types: dict[str, str] | None = None,
    nested: dict[str, list[str]] | None = None,
) -> list[str]:
    """Docstring, fields (from `__init__`), enum members, nested classes, public methods."""
    lines = docstring_lines(cls, indent)
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            lines += [f"{indent}{name}: {kind}" for name, kind in init_fields(node, field_types)]
    for node in cls.body:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            for target in node.targets:
                if is_public(target.id):  # type: ignore[attr-defined]
                    lines.append(f"{indent}{target.id} = {ast.unparse(node.value)}")  # type: ignore[attr-defined]
        elif isinstance(node, ast.ClassDef) and nested is not None and node.name in nested:
            lines += nested[node.name]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if node.name == "__init__" and not only_raises(node) or is_public(node.name) and not node.name.startswith("__"):
                lines += function_lines(node, indent, field_types)
    if len(lines) == len(docstring_lines(cls, indent)):
        lines.append(f"{indent}...")
    return lines


def variant_base(statement: ast.stmt) -> tuple[str, str] | None:
    """`Enum.VARIANT = type("Enum.VARIANT", (Enum.VARIANT, Enum), {})` -> (Enum, VARIANT)."""
    if not (
        isinstance(statement, ast.Assign)
        and len(statement.targets) == 1
        and isinstance(statement.targets[0], ast.Attribute)
        and isinstance(statement.targets[0].value, ast.Name)
        and isinstance(statement.value, ast.Call)
        and ast.unparse(statement.value.func) == "type"
    ):
        return None
    return statement.targets[0].value.id, statement.targets[0].attr


def error_field_types(module: ast.Module, error: str) -> dict[str, dict[str, str]]:
    """Each variant's field types, from `_UniffiFfiConverterType<Error>.check_lower`:
    `if isinstance(value, Error.Variant): _UniffiFfiConverterString.check_lower(value.msg)`."""
    converter = next(
        (n for n in module.body if isinstance(n, ast.ClassDef) and n.name == f"{CONVERTER_PREFIX}Type{error}"),
        None,
    )
    check_lower = converter and next(
        (n for n in converter.body if isinstance(n, ast.FunctionDef) and n.name == "check_lower"), None
    )
    if check_lower is None:
        raise StubError(f"no {CONVERTER_PREFIX}Type{error}.check_lower to read {error}'s field types from")
    variants: dict[str, dict[str, str]] = {}
    for branch in check_lower.body:
        if not isinstance(branch, ast.If):
            continue
        test = ast.unparse(branch.test)
        prefix = f"isinstance(value, {error}."
        if not (test.startswith(prefix) and test.endswith(")")):
            raise StubError(f"{error}.check_lower: unexpected test {test}")
        fields = variants.setdefault(test[len(prefix) : -1], {})
        for statement in branch.body:
            call = statement.value if isinstance(statement, ast.Expr) else None
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name)
                and call.func.value.id.startswith(CONVERTER_PREFIX)
                and len(call.args) == 1
                and isinstance(call.args[0], ast.Attribute)
            ):
                fields[call.args[0].attr] = converter_type(call.func.value.id[len(CONVERTER_PREFIX) :])
    return variants


# Properties the package's `__init__.py` adds to an error at import (not in the generated
# module): error -> [(name, type, docstring)].
FACADE_ERROR_PROPERTIES = {
    "GatehouseError": [
        ("kind", "GatehouseErrorKind", "Which kind of error this is, without its text (as `GateFailure.kind`)."),
        ("retryable", "bool", "True when the same call may succeed if tried again later (as `GateFailure.retryable`)."),
    ],
}


# Properties the package's `__init__.py` adds to a record at import: its JSON text fields
# parsed (record -> [(name, type, docstring)]).
_DICT = "typing.Optional[typing.Dict[str, typing.Any]]"
FACADE_RECORD_PROPERTIES = {
    "Interaction": [
        ("parameters_dict", _DICT, "`parameters` parsed: the stamped config (None when absent)."),
        ("resolution_dict", _DICT, "`resolution` parsed: the recorded answer and verdict (None when absent)."),
        ("references_dict", _DICT, "`references` parsed: the turn's workflow references (None when absent)."),
    ],
    "InteractionRequest": [
        ("args_dict", _DICT, "`args` parsed: the tool call's arguments (None when absent)."),
    ],
}


def error_lines(module: ast.Module, base: ast.ClassDef, variants: ast.ClassDef) -> list[str]:
    """`class E(Exception)` and the `class E:  # type: ignore` holding its variants -> one
    class whose variants are nested subclasses."""
    field_types = error_field_types(module, base.name)
    lines = [f"class {base.name}({', '.join(ast.unparse(b) for b in base.bases)}):"]
    lines += docstring_lines(base, "    ")
    for name, kind, doc in FACADE_ERROR_PROPERTIES.get(base.name, []):
        lines += ["    @property", f"    def {name}(self) -> {kind}:", f'        """{doc}"""', "        ..."]
    for node in variants.body:
        if isinstance(node, ast.ClassDef):
            lines.append(f"    class {node.name}({base.name}):")
            lines += class_body_lines(node, "        ", field_types.get(node.name, {}))
    return lines


def stub(source: str) -> str:
    module = ast.parse(source)
    classes: dict[str, list[ast.ClassDef]] = {}
    for node in module.body:
        if isinstance(node, ast.ClassDef):
            classes.setdefault(node.name, []).append(node)
    # Enum.VARIANT is made a subclass of Enum after the class body.
    variant_of: dict[str, set[str]] = {}
    for node in module.body:
        found = variant_base(node)
        if found is not None:
            variant_of.setdefault(found[0], set()).add(found[1])

    out = [HEADER]
    for node in module.body:
        if isinstance(node, ast.ClassDef) and is_public(node.name):
            definitions = classes[node.name]
            if len(definitions) == 2 and node is definitions[0]:
                out.append("\n".join(error_lines(module, definitions[0], definitions[1])))
            elif len(definitions) == 2:
                continue  # the second half of an error, written with the first
            elif len(definitions) != 1:
                raise StubError(f"class {node.name} is defined {len(definitions)} times")
            else:
                bases = [ast.unparse(b) for b in node.bases]
                nested = {}
                for inner in node.body:
                    if isinstance(inner, ast.ClassDef):
                        if inner.name not in variant_of.get(node.name, set()):
                            raise StubError(f"{node.name}.{inner.name} is a nested class but not a variant")
                        nested[inner.name] = [f"    class {inner.name}({node.name}):"] + class_body_lines(
                            inner, "        "
                        )
                header = f"class {node.name}({', '.join(bases)}):" if bases else f"class {node.name}:"
                lines = [header] + class_body_lines(node, "    ", nested=nested)
                for name, kind, doc in FACADE_RECORD_PROPERTIES.get(node.name, []):
                    lines += ["    @property", f"    def {name}(self) -> {kind}:", f'        """{doc}"""', "        ..."]
                out.append("\n".join(lines))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_public(node.name):
            out.append("\n".join(function_lines(node, "")))
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
            value = ast.unparse(node.value)
            if name == "__all__":
                out.append(f"__all__ = {value}")
            elif is_public(name) and name not in classes:
                out.append(f"{name} = {value}")  # a type alias: JsonText = str
    return "\n\n".join(out) + "\n"


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: make_stub.py GENERATED.py OUT.pyi", file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        source = handle.read()
    try:
        text = stub(source)
    except StubError as error:
        print(f"make_stub.py: {sys.argv[1]}: {error}", file=sys.stderr)
        return 1
    with open(sys.argv[2], "w", encoding="utf-8") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
