"""Strict runtime validation of raw JSON against the openai SDK's own pydantic models.

The SDK builds its models leniently (``construct``: nothing is checked), and even its optional
``_strict_response_validation`` runs pydantic in lax mode ("123" passes as an int). Here every raw
object is validated with ``pydantic.TypeAdapter(T).validate_python(raw, strict=True)`` (types,
literals, required non-null fields), and then checked for *presence*: the SDK declares a field the
API always sends but that may be null as ``Optional[X] = None``, which pydantic never requires. So a
field declared by the model but absent from the JSON is an error too, unless the official typings
mark it optional (``name?:`` in openai npm 7.55.0, ``resources/beta/agents/**/*.d.ts``).
"""

from __future__ import annotations

from typing import Any, Union, Literal, Iterable, get_args, get_origin

import pydantic
from typing_extensions import Annotated

# Fields the official typings declare optional (`?:`) in the response objects of the Agents API.
OPTIONAL_FIELDS = frozenset(
    {"compaction", "experimental", "review", "spend_control", "async", "container_size", "desktop", "time_awareness"}
)


class StrictValidationError(AssertionError):
    pass


_adapters: dict[int, tuple[Any, pydantic.TypeAdapter[Any]]] = {}


def _adapter(tp: Any) -> pydantic.TypeAdapter[Any]:
    hit = _adapters.get(id(tp))
    if hit is None or hit[0] is not tp:
        hit = (tp, pydantic.TypeAdapter(tp))
        _adapters[id(tp)] = hit
    return hit[1]


def _unwrap(tp: Any) -> Any:
    while get_origin(tp) is Annotated:
        tp = get_args(tp)[0]
    return tp


def type_name(tp: Any) -> str:
    tp = _unwrap(tp)
    if get_origin(tp) is Union:
        return " | ".join(type_name(a) for a in get_args(tp))
    return getattr(tp, "__name__", repr(tp))


def _literal_values(model: Any, field: str) -> tuple[Any, ...]:
    info = getattr(model, "model_fields", {}).get(field)
    if info is None:
        return ()
    ann = _unwrap(info.annotation)
    return get_args(ann) if get_origin(ann) is Literal else ()


def narrow(tp: Any, raw: Any) -> Any:
    """For a union of models told apart by `type`, the member this raw object claims to be."""
    inner = _unwrap(tp)
    if get_origin(inner) is not Union or not isinstance(raw, dict) or "type" not in raw:
        return tp
    members = [m for m in get_args(inner) if raw["type"] in _literal_values(m, "type")]
    if not members:
        known = sorted(v for m in get_args(inner) for v in _literal_values(m, "type"))
        raise StrictValidationError(f"type {raw['type']!r} is not one of the {type_name(tp)} variants: {known}")
    return members[0] if len(members) == 1 else tp


def _describe(err: pydantic.ValidationError) -> str:
    errors = err.errors(include_url=False)
    # In a union, the variants whose `type` literal does not match are noise: drop everything under them.
    mismatched = {e["loc"][:-1] for e in errors if e["type"] == "literal_error" and e["loc"] and e["loc"][-1] == "type"}
    relevant = [e for e in errors if not any(e["loc"][: len(p)] == p for p in mismatched)]
    lines = []
    for e in relevant or errors:
        loc = ".".join(str(p) for p in e["loc"])
        lines.append(f"  {loc}: {e['msg']} (got {e.get('input')!r:.120})")
    return "\n".join(lines)


def _absent(value: Any, path: str, optional: frozenset[str], out: list[str]) -> None:
    if isinstance(value, pydantic.BaseModel):
        for name, info in type(value).model_fields.items():
            key = info.alias or name
            if name in value.model_fields_set:
                _absent(getattr(value, name), f"{path}.{key}", optional, out)
            elif key not in optional:
                out.append(f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            _absent(v, f"{path}[{i}]", optional, out)
    elif isinstance(value, dict):
        for k, v in value.items():
            _absent(v, f"{path}.{k}", optional, out)


def check(tp: Any, raw: Any, where: str = "", optional: Iterable[str] = ()) -> Any:
    """Validates `raw` (parsed JSON) strictly as `tp`; returns the validated value or raises.

    `optional`: more field names that may be absent (for types outside the Agents API)."""
    target = narrow(tp, raw)
    label = f"{where}: " if where else ""
    try:
        value = _adapter(target).validate_python(raw, strict=True)
    except pydantic.ValidationError as e:
        raise StrictValidationError(f"{label}not a valid {type_name(target)}:\n{_describe(e)}") from None
    missing: list[str] = []
    _absent(value, "$", OPTIONAL_FIELDS.union(optional), missing)
    if missing:
        raise StrictValidationError(f"{label}{type_name(target)} lacks required fields: {', '.join(missing)}")
    return value
