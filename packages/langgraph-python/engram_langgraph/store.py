"""EngramStore: a namespace's first segment is the end user (X-End-User-ID), the rest are the memory's tags
(``ns1:<segment>``, ``ns2:<segment>``...), the item's value is the memory's metadata and its text what is searched.

Each operation is written once, as a generator that yields the client calls it needs and receives their
answers; ``batch`` runs it on a ServiceClient, ``abatch`` on an AsyncServiceClient (awaiting each call).
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable
from datetime import UTC, datetime
from typing import Any

from engram import AsyncServiceClient, ServiceClient
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

STORE_TAG = "langgraph"
NAMESPACE_KEY = "langgraph_namespace"
ITEM_KEY = "langgraph_key"
CREATED_KEY = "langgraph_created_at"
_RESERVED = (NAMESPACE_KEY, ITEM_KEY, CREATED_KEY)
# A tag is at most 64 characters; a segment's tag is "ns<depth>:<segment>".
MAX_SEGMENT = 56
MAX_DEPTH = 48
# The server's page size and query k limit.
PAGE = 100
_OPERATORS = {"$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin"}

# A client call: the method's dotted name, its positional arguments and keyword arguments.
Call = tuple[str, tuple[Any, ...], dict[str, Any]]
Plan = Generator[Call, Any, Any]


class EngramStore(BaseStore):
    """A LangGraph BaseStore on Engram. Give a ServiceClient for ``batch`` (get, put, search...) and/or an
    AsyncServiceClient for ``abatch`` (aget, aput, asearch...); their key (or project_id) names the project."""

    def __init__(
        self,
        client: ServiceClient | None = None,
        *,
        async_client: AsyncServiceClient | None = None,
        text_fields: Iterable[str] = ("text", "content", "memory"),
    ) -> None:
        if client is None and async_client is None:
            raise TypeError("EngramStore: give a ServiceClient (client=) or an AsyncServiceClient (async_client=)")
        self.client = client
        self.async_client = async_client
        self.text_fields = tuple(text_fields)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self.client is None:
            raise TypeError("EngramStore: the blocking methods need a ServiceClient (client=); use the a-methods")
        results = []
        for op in ops:  # in order: a get after a put of the same batch sees the put
            plan = self._plan(op)
            try:
                call = next(plan)
                while True:
                    call = plan.send(_plain(_method(self.client, call[0])(*call[1], **call[2])))
            except StopIteration as done:
                results.append(done.value)
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        if self.async_client is None:
            raise TypeError("EngramStore: the async methods need an AsyncServiceClient (async_client=)")
        results = []
        for op in ops:
            plan = self._plan(op)
            try:
                call = next(plan)
                while True:
                    call = plan.send(_plain(await _method(self.async_client, call[0])(*call[1], **call[2])))
            except StopIteration as done:
                results.append(done.value)
        return results

    def _plan(self, op: Op) -> Plan:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, PutOp):
            return self._put(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise TypeError(f"EngramStore: unknown operation {type(op).__name__}")

    def _find(self, namespace: tuple[str, ...], key: str) -> Plan:
        end_user, path = _split(namespace)
        filters = {"tags_all": _tags(path), "metadata": {NAMESPACE_KEY: list(path), ITEM_KEY: key}}
        page = yield ("memories.list", (), {"limit": 1, "filters": filters, "end_user_id": end_user})
        return page["items"][0] if page["items"] else None

    def _get(self, op: GetOp) -> Plan:
        memory = yield from self._find(op.namespace, op.key)
        return _item(memory) if memory else None

    def _put(self, op: PutOp) -> Plan:
        end_user, path = _split(op.namespace)
        if op.value is None:
            filters = {"tags_all": _tags(path), "metadata": {NAMESPACE_KEY: list(path), ITEM_KEY: op.key}}
            yield ("memories.forget", ({"filters": filters},), {"end_user_id": end_user})
            return None
        for name in _RESERVED:
            if name in op.value:
                raise ValueError(f'EngramStore: a value may not hold "{name}" (the store keeps it)')
        existing = yield from self._find(op.namespace, op.key)
        text = self._text(op.value, op.index)
        created = (existing or {}).get("metadata", {}).get(CREATED_KEY) or datetime.now(UTC).isoformat()
        metadata = {**op.value, NAMESPACE_KEY: list(path), ITEM_KEY: op.key, CREATED_KEY: created}
        # A memory's text cannot change: the same text is an update of its value, another text a new memory.
        if existing and existing["text"] in (text, _keyed(text, op.key)):
            yield ("memories.update", (existing["id"], {"metadata": metadata}), {"end_user_id": end_user})
            return None
        if existing:
            yield ("memories.forget", ({"ids": [existing["id"]]},), {"end_user_id": end_user})
        body = {"text": text, "tags": _tags(path), "metadata": metadata, "source": "langgraph"}
        added = yield ("memories.add", (body,), {"end_user_id": end_user})
        # Engram keeps one memory per statement of an end user: the same text under another key is stored
        # with the key appended, so that both items exist.
        if added.get("status") == "skipped" and added.get("reason") == "duplicate_text":
            added = yield ("memories.add", ({**body, "text": _keyed(text, op.key)},), {"end_user_id": end_user})
        if added.get("status") == "skipped":
            raise RuntimeError(f'EngramStore: the put of "{op.key}" was skipped ({added.get("reason")})')
        return None

    def _search(self, op: SearchOp) -> Plan:
        end_user, path = _split(op.namespace_prefix, "a search")
        equal, conditions = _split_filter(op.filter or {})
        filters: dict[str, Any] = {"tags_all": _tags(path)}
        if equal:
            filters["metadata"] = equal
        found: list[SearchItem] = []
        if op.query:
            # The server ranks at most 100; conditions it cannot evaluate are applied to those.
            k = PAGE if conditions else min(PAGE, op.offset + op.limit)
            answer = yield (
                "memories.query",
                ({"query": op.query, "k": k, "filters": filters},),
                {"end_user_id": end_user},
            )
            found = [_search_item(m, m["score"]) for m in answer["memories"] if _matches(m, conditions)]
            return found[op.offset : op.offset + op.limit]
        skipped = 0
        cursor = None
        while True:
            params = {
                "filters": filters,
                "order_by": "updated_at",
                "limit": PAGE,
                "end_user_id": end_user,
                **({"cursor": cursor} if cursor else {}),
            }
            page = yield ("memories.list", (), params)
            for memory in page["items"]:
                if not _matches(memory, conditions):
                    continue
                if skipped < op.offset:
                    skipped += 1
                    continue
                found.append(_search_item(memory, None))
                if len(found) >= op.limit:
                    return found
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def _list_namespaces(self, op: ListNamespacesOp) -> Plan:
        conditions = tuple(op.match_conditions or ())
        prefix = next((c.path for c in conditions if c.match_type == "prefix"), ())
        memories: list[dict[str, Any]] = []
        if prefix and prefix[0] != "*":
            cursor = None
            while True:
                params = {
                    "filters": {"tags_all": [STORE_TAG]},
                    "limit": PAGE,
                    "end_user_id": prefix[0],
                    **({"cursor": cursor} if cursor else {}),
                }
                page = yield ("memories.list", (), params)
                memories.extend(page["items"])
                cursor = page.get("next_cursor")
                if not cursor:
                    break
        else:
            # Every end user: the project's export (read once, a page of rows at a time on the server).
            exported = yield ("memories.export", (), {})
            memories = [m for m in exported["memories"] if STORE_TAG in m["tags"]]
        seen: dict[tuple[str, ...], None] = {}
        for memory in memories:
            namespace = _namespace(memory)
            if not all(_matches_condition(namespace, c) for c in conditions):
                continue
            seen[namespace[: op.max_depth] if op.max_depth is not None else namespace] = None
        return sorted(seen)[op.offset : op.offset + op.limit]

    def _text(self, value: dict[str, Any], index: Any) -> str:
        """The text Engram searches: the fields ``index`` names, else the first text field, else the value as JSON."""
        if isinstance(index, list) and index:
            parts = [v if isinstance(v, str) else json.dumps(v) for v in (value.get(f) for f in index) if v is not None]
            if parts:
                return "\n".join(parts)
        for field in self.text_fields:
            v = value.get(field)
            if isinstance(v, str) and v.strip():
                return v
        return json.dumps(value, separators=(",", ":"))


def _method(client: Any, name: str) -> Any:
    group, method = name.split(".")
    return getattr(getattr(client, group), method)


def _plain(answer: Any) -> Any:
    """A client's answer as plain JSON values (its models keep the server's fields)."""
    if isinstance(answer, list):
        return [_plain(a) for a in answer]
    return answer.model_dump(mode="json") if hasattr(answer, "model_dump") else answer


def _keyed(text: str, key: str) -> str:
    return f"{text} [{key}]"


def _split(namespace: tuple[str, ...], what: str = "an item") -> tuple[str, tuple[str, ...]]:
    """The end user and the tag path of a namespace."""
    if not namespace or not namespace[0]:
        raise ValueError(f'EngramStore: {what}\'s namespace starts with the end user, e.g. ("user-42", "memories")')
    end_user, path = namespace[0], tuple(namespace[1:])
    if len(path) > MAX_DEPTH:
        raise ValueError(f"EngramStore: a namespace has at most {MAX_DEPTH + 1} segments")
    for segment in path:
        if not 0 < len(segment) <= MAX_SEGMENT:
            raise ValueError(f'EngramStore: a namespace segment has 1-{MAX_SEGMENT} characters ("{segment[:80]}")')
    return end_user, path


def _tags(path: tuple[str, ...]) -> list[str]:
    """The store's own tag, then each segment with its depth, so that a namespace prefix is a tags_all filter."""
    return [STORE_TAG, *(f"ns{i}:{segment}" for i, segment in enumerate(path, start=1))]


def _namespace(memory: dict[str, Any]) -> tuple[str, ...]:
    path = memory["metadata"].get(NAMESPACE_KEY)
    return (str(memory["end_user_id"]), *(str(s) for s in (path if isinstance(path, list) else [])))


def _fields(memory: dict[str, Any]) -> dict[str, Any]:
    metadata = dict(memory["metadata"])
    metadata.pop(NAMESPACE_KEY, None)
    key = metadata.pop(ITEM_KEY, "")
    created = metadata.pop(CREATED_KEY, None) or memory["created_at"]
    return {
        "namespace": _namespace(memory),
        "key": str(key),
        "value": metadata,
        "created_at": _time(created),
        "updated_at": _time(memory["updated_at"]),
    }


def _item(memory: dict[str, Any]) -> Item:
    return Item(**_fields(memory))


def _search_item(memory: dict[str, Any], score: float | None) -> SearchItem:
    return SearchItem(**_fields(memory), score=score)


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _split_filter(filter: dict[str, Any]) -> tuple[dict[str, Any], list[tuple[str, str, Any]]]:
    """Plain values (and $eq) go to the server as metadata equality; other operators are checked here."""
    equal: dict[str, Any] = {}
    conditions: list[tuple[str, str, Any]] = []
    for field, wanted in filter.items():
        if isinstance(wanted, dict) and any(k.startswith("$") for k in wanted):
            for operator, operand in wanted.items():
                if operator not in _OPERATORS:
                    raise ValueError(f"EngramStore: unsupported filter operator {operator} (on {field})")
                if operator == "$eq":
                    equal[field] = operand
                else:
                    conditions.append((field, operator, operand))
        else:
            equal[field] = wanted
    return equal, conditions


def _matches(memory: dict[str, Any], conditions: list[tuple[str, str, Any]]) -> bool:
    value = memory["metadata"]
    for field, operator, operand in conditions:
        actual = value.get(field)
        try:
            ok = {
                "$ne": lambda: actual != operand,
                "$gt": lambda: actual is not None and actual > operand,
                "$gte": lambda: actual is not None and actual >= operand,
                "$lt": lambda: actual is not None and actual < operand,
                "$lte": lambda: actual is not None and actual <= operand,
                "$in": lambda: actual in operand,
                "$nin": lambda: actual not in operand,
            }[operator]()
        except TypeError:
            ok = False
        if not ok:
            return False
    return True


def _matches_condition(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(p == "*" or p == n for p, n in zip(path, part, strict=False))
