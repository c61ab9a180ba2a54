"""A LangGraph BaseStore whose items are memories of the Engram memory service, on the official Python client."""

from engram_langgraph.store import CREATED_KEY, ITEM_KEY, NAMESPACE_KEY, STORE_TAG, EngramStore

__all__ = ["EngramStore", "STORE_TAG", "NAMESPACE_KEY", "ITEM_KEY", "CREATED_KEY"]
__version__ = "0.1.0"
