"""EngramStore against a real Engram server, through LangGraph's own BaseStore methods (sync and async),
each result checked against the memories the HTTP API shows."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from engram import AsyncServiceClient, ServiceClient, ValidationError
from engram_langgraph import EngramStore
from langgraph.store.base import BaseStore, Item, SearchItem


def texts(client: ServiceClient, end_user: str) -> list[str]:
    return [m.text for m in client.memories.list(limit=100, end_user_id=end_user).items]


def test_sync_put_get_search_list_delete(server: Any) -> None:
    http = ServiceClient(server.url, server.api_key, project_id=server.project_id)
    store = EngramStore(http)
    assert isinstance(store, BaseStore)
    ns = ("carol", "prefs", "food")
    store.put(ns, "drink", {"text": "Carol drinks oat milk flat whites", "rating": 4})
    store.put(ns, "dish", {"text": "Carol loves spicy ramen", "rating": 5})
    store.put(("carol", "prefs", "travel"), "seat", {"content": "Carol books aisle seats", "rating": 3})
    store.put(("carol", "notes"), "n1", {"topic": "birthday", "day": 12}, index=False)

    # Stored as memories of the end user, tagged by namespace, the value as metadata.
    memory = next(
        m for m in http.memories.list(limit=100, end_user_id="carol").items if m.text == "Carol loves spicy ramen"
    )
    assert memory.tags == ["langgraph", "ns1:prefs", "ns2:food"]
    assert memory.metadata["rating"] == 5 and memory.metadata["langgraph_namespace"] == ["prefs", "food"]
    assert texts(http, "dave") == []
    assert '{"topic":"birthday","day":12}' in texts(http, "carol")

    dish = store.get(ns, "dish")
    assert isinstance(dish, Item)
    assert (dish.namespace, dish.key, dish.value) == (ns, "dish", {"text": "Carol loves spicy ramen", "rating": 5})
    assert store.get(ns, "missing") is None
    assert store.get(("dave", "prefs", "food"), "dish") is None

    # Same text: the value changes in place; new text: the old memory is forgotten, createdAt kept.
    store.put(ns, "dish", {"text": "Carol loves spicy ramen", "rating": 2})
    assert store.get(ns, "dish").value["rating"] == 2  # type: ignore[union-attr]
    store.put(ns, "dish", {"text": "Carol loves tonkotsu ramen", "rating": 5})
    assert "Carol loves spicy ramen" not in texts(http, "carol")
    assert store.get(ns, "dish").created_at == dish.created_at  # type: ignore[union-attr]
    store.put(ns, "dish-copy", {"text": "Carol loves tonkotsu ramen"})
    assert store.get(ns, "dish-copy").value == {"text": "Carol loves tonkotsu ramen"}  # type: ignore[union-attr]
    store.delete(ns, "dish-copy")

    ramen = store.search(("carol",), query="ramen")
    assert [i.key for i in ramen] == ["dish"]
    assert isinstance(ramen[0], SearchItem) and ramen[0].score and ramen[0].score > 0
    assert sorted(i.key for i in store.search(("carol", "prefs"))) == ["dish", "drink", "seat"]
    assert [i.key for i in store.search(("carol", "prefs", "travel"))] == ["seat"]
    assert [i.key for i in store.search(("carol",), filter={"rating": 5})] == ["dish"]
    assert sorted(i.key for i in store.search(("carol", "prefs"), filter={"rating": {"$gte": 4}})) == ["dish", "drink"]
    assert len(store.search(("carol", "prefs"), filter={"rating": {"$ne": 5}}, limit=1, offset=1)) == 1
    assert store.search(("carol", "prefs"), query="ramen", filter={"rating": 4}) == []

    assert store.list_namespaces(prefix=("carol",)) == [
        ("carol", "notes"),
        ("carol", "prefs", "food"),
        ("carol", "prefs", "travel"),
    ]
    assert store.list_namespaces(prefix=("carol",), max_depth=2) == [("carol", "notes"), ("carol", "prefs")]
    assert store.list_namespaces(suffix=("food",)) == [("carol", "prefs", "food")]

    store.delete(ns, "drink")
    assert store.get(ns, "drink") is None
    assert "Carol drinks oat milk flat whites" not in texts(http, "carol")

    with pytest.raises(ValueError, match="starts with the end user"):
        store.search((), query="anything")
    with pytest.raises(ValueError, match="may not hold"):
        store.put(("carol",), "x", {"langgraph_key": "y"})
    with pytest.raises(ValueError, match="unsupported filter operator"):
        store.search(("carol",), filter={"rating": {"$regex": "x"}})
    # A value the server refuses (metadata over 16 KiB) is the client's ValidationError naming the field; nothing is stored.
    with pytest.raises(ValidationError) as refused:
        store.put(("carol",), "big", {"text": "big", "blob": "x" * 20_000})
    assert refused.value.field == "metadata"
    assert store.get(("carol",), "big") is None


def test_async_methods_on_the_async_client(server: Any) -> None:
    http = ServiceClient(server.url, server.api_key, project_id=server.project_id)

    async def scenario() -> None:
        async with AsyncServiceClient(server.url, server.api_key, project_id=server.project_id) as client:
            store = EngramStore(async_client=client)
            ns = ("erin", "memories")
            await store.aput(ns, "seat", {"text": "Erin prefers window seats", "kind": "preference"})
            await store.aput(ns, "food", {"text": "Erin is allergic to peanuts", "kind": "health"})
            item = await store.aget(ns, "seat")
            assert item is not None and item.value == {"text": "Erin prefers window seats", "kind": "preference"}
            found = await store.asearch(("erin",), query="window seat", filter={"kind": "preference"})
            assert [i.key for i in found] == ["seat"]
            assert await store.alist_namespaces(prefix=("erin",)) == [("erin", "memories")]
            await store.adelete(ns, "food")
            assert await store.aget(ns, "food") is None
            with pytest.raises(TypeError, match="ServiceClient"):
                store.get(ns, "seat")

    asyncio.run(scenario())
    assert texts(http, "erin") == ["Erin prefers window seats"]
