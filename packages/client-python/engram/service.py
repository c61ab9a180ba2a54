"""The data plane and /v1 with an API key: memories, retrieval, feedback, relations, intelligence, the
tenant plane. Project, end user and tenant are set once on the client or per call (project_id=,
end_user_id=, tenant_id=). Answers are pydantic models (engram.models); unknown fields are kept."""

from __future__ import annotations

import builtins
import json
import os
import pathlib
from typing import Any, BinaryIO

import httpx

from . import bodies, models
from ._plane import _Group, _Plane, transport_settings
from ._transport import AsyncTransport, SyncTransport
from .errors import EngramError

BULK_SIZE = 50


def file_part(file: str | os.PathLike[str] | bytes | BinaryIO, filename: str | None) -> tuple[str, bytes | BinaryIO]:
    """The multipart part of an upload: a path is read from disk (its name is the default filename); bytes and
    open binary files are sent as given, named by `filename` (its extension tells the file type) or the file's name."""
    if isinstance(file, (str, os.PathLike)):
        path = pathlib.Path(file)
        return (filename or path.name, path.read_bytes())
    if filename is None and not isinstance(file, bytes) and isinstance(getattr(file, "name", None), str):
        filename = pathlib.Path(file.name).name
    if not filename:
        raise TypeError("upload: a filename is needed with bytes (its extension tells the file type)")
    return (filename, file)


def list_params(params: dict[str, Any]) -> dict[str, Any]:
    """GET /memory's parameters: filters given as a dict go as its JSON text."""
    filters = params.get("filters")
    return params if filters is None or isinstance(filters, str) else {**params, "filters": json.dumps(filters)}


class Health(_Group):
    def live(self, **params: Any) -> models.HealthLiveResult:
        return self._call("health.live", **params)

    def ready(self, **params: Any) -> models.HealthReadyResult:
        return self._call("health.ready", **params)


class Memories(_Group):
    def add(self, body: bodies.MemoriesAddBody, **params: Any) -> models.MemoriesAddResult:
        return self._call("memories.add", body=body, **params)

    def bulk_add(self, body: bodies.MemoriesBulkAddBody, **params: Any) -> models.MemoriesBulkAddResult:
        return self._call("memories.bulkAdd", body=body, **params)

    # The facts a conversation states about the end user (Mem0's add with infer=True), each created or a duplicate.
    def infer(self, body: bodies.MemoriesInferBody, **params: Any) -> models.MemoriesInferResult:
        return self._call("memories.infer", body=body, **params)

    # A page of the end user's memories; filters= is the filters dict of query (sent as JSON), cursor= the last page's next_cursor.
    def list(self, **params: Any) -> models.MemoriesListResult:
        return self._call("memories.list", **list_params(params))

    def list_all(self, **params: Any) -> Any:
        """Every memory the list selects, page after page (iterate; async for on the async client)."""
        return self._client._cursor_pages("memories.list", **list_params(params))

    def export(self, **params: Any) -> models.MemoriesExportResult:
        return self._call("memories.export", **params)

    def batch_update(self, body: bodies.MemoriesBatchUpdateBody, **params: Any) -> models.MemoriesBatchUpdateResult:
        return self._call("memories.batchUpdate", body=body, **params)

    def forget(self, body: bodies.MemoriesForgetBody, **params: Any) -> models.MemoriesForgetResult:
        return self._call("memories.forget", body=body, **params)

    def forget_end_user(self, end_user_id: str | int, **params: Any) -> models.MemoriesForgetEndUserResult:
        return self._call("memories.forgetEndUser", path={"end_user_id": end_user_id}, **params)

    def get(self, memory_id: str | int, **params: Any) -> models.MemoriesGetResult:
        return self._call("memories.get", path={"memory_id": memory_id}, **params)

    def update(
        self, memory_id: str | int, body: bodies.MemoriesUpdateBody, **params: Any
    ) -> models.MemoriesUpdateResult:
        return self._call("memories.update", path={"memory_id": memory_id}, body=body, **params)

    def history(self, memory_id: str | int, **params: Any) -> models.MemoriesHistoryResult:
        return self._call("memories.history", path={"memory_id": memory_id}, **params)

    def upload(
        self, file: str | os.PathLike[str] | bytes | BinaryIO, filename: str | None = None, **params: Any
    ) -> models.MemoriesUploadResult:
        return self._call("memories.upload", files={"file": file_part(file, filename)}, **params)

    def add_many(self, items: builtins.list[dict[str, Any]], **params: Any) -> Any:
        return self._client._add_many(items, **params)

    def upload_job(self, job_id: str | int, **params: Any) -> models.MemoriesUploadJobResult:
        return self._call("memories.uploadJob", path={"job_id": job_id}, **params)

    def query(self, body: bodies.MemoriesQueryBody, **params: Any) -> models.MemoriesQueryResult:
        return self._call("memories.query", body=body, **params)

    def retrieve(self, body: bodies.MemoriesRetrieveBody, **params: Any) -> models.MemoriesRetrieveResult:
        return self._call("memories.retrieve", body=body, **params)

    def search(self, body: bodies.MemoriesSearchBody, **params: Any) -> models.MemoriesSearchResult:
        return self._call("memories.search", body=body, **params)

    def compose(self, body: bodies.MemoriesComposeBody, **params: Any) -> models.MemoriesComposeResult:
        return self._call("memories.compose", body=body, **params)

    def refresh_embeddings(self, **params: Any) -> models.MemoriesRefreshEmbeddingsResult:
        return self._call("memories.refreshEmbeddings", **params)

    def refresh_job(self, job_id: str | int, **params: Any) -> models.MemoriesRefreshJobResult:
        return self._call("memories.refreshJob", path={"job_id": job_id}, **params)

    def summarize(self, body: bodies.MemoriesSummarizeBody, **params: Any) -> models.MemoriesSummarizeResult:
        return self._call("memories.summarize", body=body, **params)

    def synthesize(self, body: bodies.MemoriesSynthesizeBody, **params: Any) -> models.MemoriesSynthesizeResult:
        return self._call("memories.synthesize", body=body, **params)


class Feedback(_Group):
    def add(self, memory_id: str | int, body: bodies.FeedbackAddBody, **params: Any) -> models.FeedbackAddResult:
        return self._call("feedback.add", path={"memory_id": memory_id}, body=body, **params)

    def list(self, memory_id: str | int, **params: Any) -> models.FeedbackListResult:
        return self._call("feedback.list", path={"memory_id": memory_id}, **params)

    def delete(self, memory_id: str | int, feedback_id: str | int, **params: Any) -> models.FeedbackDeleteResult:
        return self._call("feedback.delete", path={"memory_id": memory_id, "feedback_id": feedback_id}, **params)


class Relations(_Group):
    def create(self, body: bodies.RelationsCreateBody, **params: Any) -> models.RelationsCreateResult:
        return self._call("relations.create", body=body, **params)

    def list(self, memory_id: str | int, **params: Any) -> models.RelationsListResult:
        return self._call("relations.list", path={"memory_id": memory_id}, **params)

    def delete(self, relation_id: str | int, **params: Any) -> models.RelationsDeleteResult:
        return self._call("relations.delete", path={"relation_id": relation_id}, **params)


class Intelligence(_Group):
    def ontology(self, **params: Any) -> models.IntelligenceOntologyResult:
        return self._call("intelligence.ontology", **params)

    def replace_ontology(
        self, body: bodies.IntelligenceReplaceOntologyBody, **params: Any
    ) -> models.IntelligenceReplaceOntologyResult:
        return self._call("intelligence.replaceOntology", body=body, **params)

    def graph(self, **params: Any) -> models.IntelligenceGraphResult:
        return self._call("intelligence.graph", **params)

    def clusters(self, **params: Any) -> models.IntelligenceClustersResult:
        return self._call("intelligence.clusters", **params)

    def decisions(self, **params: Any) -> models.IntelligenceDecisionsResult:
        return self._call("intelligence.decisions", **params)

    def decisions_all(self, **params: Any) -> Any:
        return self._pages("intelligence.decisions", **params)

    def resolve_decision(
        self, decision_id: str | int, body: bodies.IntelligenceResolveDecisionBody, **params: Any
    ) -> models.IntelligenceResolveDecisionResult:
        return self._call("intelligence.resolveDecision", path={"decision_id": decision_id}, body=body, **params)

    def report(self, **params: Any) -> models.IntelligenceReportResult:
        return self._call("intelligence.report", **params)

    def stats(self, **params: Any) -> models.IntelligenceStatsResult:
        return self._call("intelligence.stats", **params)


class V1(_Group):
    """The /v1 conversation plane (tenant_id and user_id in the body or query)."""

    def add_turn(self, body: bodies.V1AddTurnBody, **params: Any) -> models.V1AddTurnResult:
        return self._call("v1.addTurn", body=body, **params)

    def recall(self, body: bodies.V1RecallBody, **params: Any) -> models.V1RecallResult:
        return self._call("v1.recall", body=body, **params)

    def status(self, **params: Any) -> models.V1StatusResult:
        return self._call("v1.status", **params)

    def memories(self, **params: Any) -> models.V1MemoriesResult:
        return self._call("v1.memories", **params)

    def memories_all(self, **params: Any) -> Any:
        return self._pages("v1.memories", **params)


class _ServicePlane(_Plane):
    def _groups(self) -> None:
        self.health = Health(self)
        self.memories = Memories(self)
        self.feedback = Feedback(self)
        self.relations = Relations(self)
        self.intelligence = Intelligence(self)
        self.v1 = V1(self)


def _merge(
    outcome: dict[str, Any], start: int, batch: list[dict[str, Any]], answer: Any, error: EngramError | None
) -> None:
    """Adds one bulk-add answer (or the error that failed the whole request) to the add_many outcome."""
    if error is not None:
        for i in range(len(batch)):
            failed = {"code": error.code, "message": str(error), **({"field": error.field} if error.field else {})}
            outcome["results"].append({"index": start + i, "status": "failed", "error": failed})
            outcome["totals"]["failed"] += 1
        return
    for result in answer["results"]:
        outcome["results"].append({**result.model_dump(exclude_none=True), "index": start + result["index"]})
        outcome["totals"][result["status"]] += 1


class ServiceClient(_ServicePlane):
    """Blocking data-plane client: ``ServiceClient(base_url, api_key, project_id=..., end_user_id=...)``."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        project_id: str | None = None,
        end_user_id: str | None = None,
        tenant_id: str | None = None,
        http: httpx.Client | None = None,
        **settings: Any,
    ) -> None:
        defaults = {"project_id": project_id, "end_user_id": end_user_id, "tenant_id": tenant_id}
        self.transport = SyncTransport(
            transport_settings(base_url, defaults, settings), lambda: {"x-api-key": api_key}, http=http
        )
        self._groups()

    def _add_many(self, items: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        """Adds any number of memories in requests of 50 (bulk-add): totals and one result per item, indexed as given."""
        outcome: dict[str, Any] = {"totals": {"created": 0, "skipped": 0, "failed": 0}, "results": []}
        for start in range(0, len(items), BULK_SIZE):
            batch = items[start : start + BULK_SIZE]
            try:
                _merge(outcome, start, batch, self._call("memories.bulkAdd", body=batch, **params), None)
            except EngramError as error:
                _merge(outcome, start, batch, None, error)
        return outcome

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncServiceClient(_ServicePlane):
    """The same surface as ServiceClient; every method is awaited and list_all iterators are async."""

    # The groups are ServiceClient's, whose methods are typed by their blocking answers; awaited here, they
    # are typed Any (the answers are the same models at run time).
    health: Any
    memories: Any
    feedback: Any
    relations: Any
    intelligence: Any
    v1: Any

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        project_id: str | None = None,
        end_user_id: str | None = None,
        tenant_id: str | None = None,
        http: httpx.AsyncClient | None = None,
        **settings: Any,
    ) -> None:
        defaults = {"project_id": project_id, "end_user_id": end_user_id, "tenant_id": tenant_id}

        async def headers() -> dict[str, str]:
            return {"x-api-key": api_key}

        self.transport = AsyncTransport(transport_settings(base_url, defaults, settings), headers, http=http)
        self._groups()

    async def _add_many(self, items: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        outcome: dict[str, Any] = {"totals": {"created": 0, "skipped": 0, "failed": 0}, "results": []}
        for start in range(0, len(items), BULK_SIZE):
            batch = items[start : start + BULK_SIZE]
            try:
                _merge(outcome, start, batch, await self._call("memories.bulkAdd", body=batch, **params), None)
            except EngramError as error:
                _merge(outcome, start, batch, None, error)
        return outcome

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> AsyncServiceClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
