"""Every operation through the Python clients, against a real server; the last test checks none was left out."""

from __future__ import annotations

import asyncio
import http.server
import pathlib
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from engram import (
    AsyncControlClient,
    AsyncServiceClient,
    AuthenticationError,
    ConflictError,
    ControlClient,
    EngramError,
    NotFoundError,
    PermissionError,
    ServiceClient,
    ValidationError,
    verify_webhook,
)
from engram._operations import OPERATIONS
from engram.webhooks import WebhookVerificationError

SENT: set[str] = set()


def record(request: dict[str, Any]) -> None:
    SENT.add(request["operation_id"])


def until(read: Callable[[], Any], done: Callable[[Any], bool]) -> Any:
    for _ in range(1200):
        value = read()
        if done(value):
            return value
        time.sleep(0.025)
    raise AssertionError("condition not reached")


def failure(call: Callable[[], Any]) -> EngramError:
    with pytest.raises(EngramError) as caught:
        call()
    return caught.value


class Local(http.server.ThreadingHTTPServer):
    """A site for the web crawler and a webhook receiver, on 127.0.0.1."""

    def __init__(self) -> None:
        self.deliveries: list[tuple[dict[str, str], bytes]] = []
        local = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body = b"<html><body><h1>Docs</h1><p>The API rate limit is one hundred requests a minute.</p></body></html>"
                self.send_response(200)
                self.send_header("content-type", "text/html")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                local.deliveries.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *_: Any) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        threading.Thread(target=self.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def local():
    site = Local()
    yield site
    site.shutdown()


@pytest.fixture(scope="module")
def service(server):
    with ServiceClient(
        server.url, server.api_key, project_id=server.project_id, end_user_id="alice", on_request=record
    ) as client:
        yield client


@pytest.fixture(scope="module")
def control(server):
    with ControlClient(server.url, project_id=server.project_id, on_request=record) as client:
        client.sign_in(server.email, server.password)
        yield client


def test_data_plane(service):
    assert service.health.live()["status"] == "ok"
    assert service.health.ready() is not None
    memory = service.memories.add({"text": "Alice prefers window seats on long flights", "tags": ["travel"]})
    items = [{"text": f"Fact number {i} about Alice's garden", "client_ref": f"fact-{i}"} for i in range(120)]
    items[7] = {"text": ""}
    many = service.memories.add_many(items)
    assert many["totals"] == {"created": 119, "skipped": 0, "failed": 1}
    assert [r["index"] for r in many["results"]] == list(range(120))
    assert many["results"][7]["error"]["code"] == "validation_error"
    assert service.memories.add_many(items[:3])["totals"]["skipped"] == 3
    bulk = service.memories.bulk_add([{"text": "Alice drives a blue bicycle"}])
    inferred = service.memories.infer({"messages": [{"role": "user", "content": "I work at Initech.", "id": "m1"}]})
    assert [(r["status"], r["memory"]["text"]) for r in inferred["results"]] == [("created", "I work at Initech.")]
    other = bulk["results"][0]["memory"]["id"]

    assert service.memories.get(memory["id"])["id"] == memory["id"]
    service.memories.update(memory["id"], {"tags": ["travel", "seats"]})
    assert service.memories.history(memory["id"])["items"]
    assert (
        service.memories.batch_update({"updates": [{"id": memory["id"], "importance": 0.9}]})["totals"]["updated"] == 1
    )
    assert len(service.memories.export()["memories"]) > 100
    page = service.memories.list(limit=2, total=True, filters={"tags_any": ["travel"]})
    assert [m["id"] for m in page["items"]] == [memory["id"]] and page["total"] == 1 and page["next_cursor"] is None
    # The filter language's operators, and a 400 naming the path of an unknown one.
    operators = service.memories.list(
        filters={
            "tags": {"$in": ["seats", "none"]},
            "importance": {"$gte": 0.9},
            "$not": {"text": {"$contains": "aisle"}},
        }
    )
    assert [m["id"] for m in operators["items"]] == [memory["id"]]
    unknown = failure(
        lambda: service.memories.query({"query": "seats", "filters": {"metadata": {"a": {"$regex": "x"}}}})
    )
    assert unknown.status == 400 and unknown.field == "filters/metadata/a/$regex"
    listed = [m["id"] for m in service.memories.list_all(limit=7, order="asc")]
    assert len(listed) > 100 and listed == sorted(listed)
    bob = service.memories.add({"text": "Bob likes aisle seats"}, end_user_id="bob")
    assert failure(lambda: service.memories.get(bob["id"])).status == 404

    assert service.memories.query({"query": "window seats", "k": 3})["memories"][0]["id"] == memory["id"]
    assert service.memories.retrieve({"prompt": "Where does Alice like to sit?"}) is not None
    assert service.memories.search({"query": "seats"}) is not None
    assert service.memories.compose({"task": "Book a flight for Alice"}) is not None
    job = service.memories.refresh_embeddings()
    assert service.memories.refresh_job(job["id"])["id"] == job["id"]
    assert service.memories.summarize({"memory_ids": [memory["id"], other]}) is not None
    assert service.memories.synthesize({"question": "Where does Alice like to sit?"}) is not None

    feedback = service.feedback.add(memory["id"], {"rating": "positive"})
    assert len(service.feedback.list(memory["id"])["items"]) == 1
    service.feedback.delete(memory["id"], feedback["id"])
    relation = service.relations.create({"source_id": memory["id"], "target_id": other, "type": "related"})
    assert service.relations.list(memory["id"])["items"]
    service.relations.delete(relation["id"])

    # A path is read from disk (named after its file name); bytes and open binary files are sent as given.
    with tempfile.TemporaryDirectory() as folder:
        notes = pathlib.Path(folder) / "seats.md"
        notes.write_text("# Seats\n\nAlice books seat 12A.")
        assert service.memories.upload(str(notes))["status"] == "created"
        assert "12A" in " ".join(m["text"] for m in service.memories.query({"query": "seat 12A"})["memories"])
        (pathlib.Path(folder) / "tea.md").write_text("# Tea\n\nAlice drinks green tea at four.")
        with open(pathlib.Path(folder) / "tea.md", "rb") as opened:
            assert service.memories.upload(opened)["status"] == "created"
    assert service.memories.upload(b"# Bikes\n\nAlice rides a blue bicycle to work.", "bikes.md")["status"] == "created"
    large = service.memories.upload(
        ("# Garden\n\n" + "Alice grows tomatoes and basil in the garden. " * 80).encode(), "garden.md"
    )
    assert large["status"] == "queued"
    assert service.memories.upload_job(large["job"]["id"]) is not None

    dry = service.memories.forget({"filters": {"tags_any": ["nothing-tagged-so"]}, "dry_run": True})
    assert (dry["dry_run"], dry["ids"], dry["matched"], dry["has_more"]) == (True, [], 0, False)
    assert service.memories.forget({"ids": [memory["id"]]}) == [memory["id"]]
    assert failure(lambda: service.memories.get(memory["id"])).code == "not_found"
    assert service.memories.forget_end_user("bob") is not None


def test_errors_have_the_class_of_their_status(server, service, control):
    invalid = failure(lambda: service.memories.add({"text": 42}))  # type: ignore[typeddict-item]
    assert isinstance(invalid, ValidationError) and (invalid.status, invalid.field) == (400, "text")
    assert isinstance(failure(lambda: service.memories.get(987654)), NotFoundError)
    with ServiceClient(server.url, "engram_not_a_key", project_id=server.project_id, end_user_id="dora") as stranger:
        assert isinstance(failure(lambda: stranger.memories.get(1)), AuthenticationError)
    reader = control.keys.create({"name": "reads only", "scopes": ["memories:read"]})
    with ServiceClient(server.url, reader["key"], project_id=server.project_id, end_user_id="dora") as read_only:
        refused = failure(lambda: read_only.memories.add({"text": "Refused: the key only reads"}))
    assert isinstance(refused, PermissionError) and refused.status == 403 and "PermissionError" in repr(refused)


def test_intelligence_and_v1(server, service):
    ontology = service.intelligence.ontology()
    replaced = service.intelligence.replace_ontology(
        {k: ontology[k] for k in ("categories", "entity_types", "relation_types")}
    )
    assert replaced["revision"] > 0
    assert service.intelligence.graph() is not None
    assert service.intelligence.clusters(limit=5) is not None
    assert service.intelligence.decisions() is not None
    assert failure(lambda: service.intelligence.resolve_decision(999999, {"resolution": "dismiss"})).status == 404
    assert service.intelligence.report() is not None
    assert service.intelligence.stats() is not None

    with ServiceClient(
        server.url, server.api_key, project_id=server.project_id, tenant_id="acme", on_request=record
    ) as tenant:
        turn = tenant.v1.add_turn(
            {"tenant_id": "acme", "user_id": "u1", "text": "I moved to Lisbon last spring", "speaker": "user"}
        )
        assert turn["status"] == "created"
        assert [
            m["id"]
            for m in tenant.v1.recall({"tenant_id": "acme", "user_id": "u1", "query": "moved to Lisbon"})["memories"]
        ] == [turn["id"]]
        assert tenant.v1.status() is not None
        assert [m["id"] for m in tenant.v1.memories_all(tenant_id="acme", user_id="u1", limit=1)] == [turn["id"]]
        assert tenant.v1.memories(tenant_id="acme", user_id="u1")["total"] == 1


def test_control_plane(server, control):
    assert control.auth.catalogue() is not None
    second = control.auth.login({"email": server.email, "password": server.password})
    assert control.auth.refresh({"refresh_token": second["refresh_token"]})["session_id"] == second["session_id"]
    sessions = list(control.sessions.list_all(limit=1))
    assert len(sessions) >= 2
    assert control.sessions.list()["total"] == len(sessions)
    control.sessions.revoke(second["session_id"])

    assert control.organizations.list()["items"]
    assert control.organizations.create({"name": "Second organization"})["name"] == "Second organization"
    project = control.projects.create({"name": "Client project"})
    assert control.projects.get(project["id"])["id"] == project["id"]
    assert (
        control.projects.update(project["id"], {"description": "from the client"})["description"] == "from the client"
    )
    assert project["id"] in [p["id"] for p in control.projects.list()["items"]]

    key = control.keys.create({"name": "client key", "project_id": project["id"]})
    assert control.keys.get(key["id"])["id"] == key["id"]
    assert control.keys.test(key["id"]) is not None
    keys = [k["id"] for k in control.keys.list_all(limit=1)]
    assert key["id"] in keys and control.keys.list()["total"] == len(keys)
    control.keys.revoke(key["id"])
    assert control.keys.bulk_revoke({"ids": [key["id"]]})["totals"]["already_revoked"] == 1
    control.projects.delete(project["id"])

    email = f"member-{time.time_ns()}@example.com"
    invitation = control.members.invite({"email": email, "role": "member"})
    accepted = control.members.accept_invitation({"token": invitation["token"], "password": "a member password"})
    assert accepted["user_id"] in [m["user_id"] for m in control.members.list()["items"]]
    assert control.members.get(accepted["user_id"])["role"] == "member"
    assert control.members.update(accepted["user_id"], {"role": "viewer"})["role"] == "viewer"
    reset = control.members.password_reset_link(accepted["user_id"])
    assert (
        control.auth.reset_password({"token": reset["token"], "new_password": "another member password"})["user_id"]
        == accepted["user_id"]
    )
    with ControlClient(server.url, on_request=record) as member:
        member.sign_in(email, "another member password")
        member.auth.change_password({"current_password": "another member password", "new_password": "a third password"})
    control.members.remove(accepted["user_id"])
    unwanted = control.members.invite({"email": f"unwanted-{time.time_ns()}@example.com", "role": "viewer"})
    assert control.members.revoke_invitation(unwanted["id"])["status"] == "revoked"
    assert unwanted["id"] in [i["id"] for i in control.members.invitations(status="revoked")["items"]]

    assert len(control.audit.list(limit=5)["items"]) == 5
    assert control.billing.current_plan() is not None

    with ControlClient(server.url, on_request=record) as leaving:
        leaving.sign_in(server.email, server.password)
        leaving.auth.logout()
        assert failure(leaving.billing.current_plan).status == 401


def test_webhooks(control, local):
    assert control.webhooks.event_types()["items"]
    endpoint = control.webhooks.create({"name": "receiver", "url": f"{local.base}/hook", "events": ["memory.created"]})
    assert control.webhooks.get(endpoint["id"])["id"] == endpoint["id"]
    assert (
        control.webhooks.update(endpoint["id"], {"description": "from the client"})["description"] == "from the client"
    )
    assert endpoint["id"] in [e["id"] for e in control.webhooks.list()["items"]]
    control.webhooks.test(endpoint["id"])
    headers, body = until(lambda: local.deliveries, bool)[0]
    assert verify_webhook(body, headers, endpoint["secret"]) is not None
    with pytest.raises(WebhookVerificationError):
        verify_webhook(body + b" ", headers, endpoint["secret"])
    delivery = until(lambda: control.webhooks.deliveries(endpoint["id"])["items"], bool)[0]
    assert control.webhooks.delivery(endpoint["id"], delivery["id"])["id"] == delivery["id"]
    try:
        control.webhooks.retry_delivery(endpoint["id"], delivery["id"])
    except EngramError as error:
        assert error.status < 500
    assert control.webhooks.health(endpoint["id"]) is not None
    control.webhooks.pause(endpoint["id"])
    control.webhooks.resume(endpoint["id"])
    rotated = control.webhooks.rotate_secret(endpoint["id"])["secret"]
    assert rotated.startswith("whsec_")
    # While the rotated secret overlaps, a delivery is signed under both: either verifies it.
    before = len(local.deliveries)
    control.webhooks.test(endpoint["id"])
    headers, body = until(lambda: local.deliveries, lambda d: len(d) > before)[-1]
    assert len(headers["webhook-signature"].split(" ")) == 2
    for secret in (endpoint["secret"], rotated):
        assert verify_webhook(body, headers, secret) is not None
    with pytest.raises(WebhookVerificationError, match="tolerance"):
        verify_webhook(body, headers, rotated, now=time.time() + 600)
    assert "replayed" in control.webhooks.replay(endpoint["id"], {})
    control.webhooks.delete(endpoint["id"])
    assert failure(lambda: control.webhooks.get(endpoint["id"])).status == 404


def test_exports_and_imports(control):
    created = control.exports.create({"format": "jsonl"})
    done = until(lambda: control.exports.get(created["id"]), lambda e: e["status"] in ("completed", "failed"))
    assert done["status"] == "completed"
    file = b"".join(control.exports.download(created["id"]))
    assert len(file) == done["size"]
    assert created["id"] in [e["id"] for e in control.exports.list()["items"]]
    assert failure(lambda: control.exports.cancel(created["id"])).status == 409
    control.exports.delete(created["id"])

    imported = control.imports.create(file, format="engram")
    finished = until(lambda: control.imports.get(imported["id"]), lambda i: i["status"] not in ("queued", "running"))
    assert finished["status"] == "completed"
    assert imported["id"] in [i["id"] for i in control.imports.list()["items"]]
    conflict = failure(lambda: control.imports.cancel(imported["id"]))
    assert isinstance(conflict, ConflictError) and conflict.status == 409


def test_connectors_and_integrations(control, local):
    assert control.connectors.providers()["items"]
    assert control.connectors.provider("web_crawler")["name"] == "web_crawler"
    config = {"start_urls": [f"{local.base}/"], "delay_ms": 0}
    connection = control.connectors.create({"provider": "web_crawler", "name": "Docs", "config": config})
    assert control.connectors.get(connection["id"])["id"] == connection["id"]
    assert control.connectors.update(connection["id"], {"name": "Docs site"})["name"] == "Docs site"
    assert control.connectors.configuration(connection["id"])["values"]["start_urls"] == config["start_urls"]
    control.connectors.set_configuration(connection["id"], {"values": config})
    sync = control.connectors.sync(connection["id"])
    finished = until(
        lambda: control.connectors.get_sync(sync["id"]), lambda s: s["status"] in ("succeeded", "failed", "cancelled")
    )
    assert finished["status"] == "succeeded"
    assert failure(lambda: control.connectors.cancel_sync(sync["id"])).status == 409
    assert len(control.connectors.syncs(connection["id"])["items"]) == 1
    assert control.connectors.objects(connection["id"], status=None)["items"]
    assert connection["id"] in [c["id"] for c in control.connectors.list()["items"]]
    assert control.connectors.insights() is not None
    try:
        control.connectors.repair(connection["id"])
    except EngramError as error:
        assert error.status < 500
    control.connectors.purge(connection["id"])
    control.connectors.remove(connection["id"])

    assert control.integrations.list()["items"]
    control.integrations.disable("object_storage")
    control.integrations.enable("object_storage")
    assert control.integrations.overview() is not None

    # OAuth consent with the organization's own Slack app: the consent URL, then the user's refusal coming back.
    assert (
        control.integrations.set_oauth_client("slack", {"client_id": "client-slack-1", "client_secret": "a secret"})[
            "client_id"
        ]
        == "client-slack-1"
    )
    slack = control.connectors.create(
        {"provider": "slack", "name": "Team", "end_user_id": "team", "config": {"channels": ["#general"]}}
    )
    consent = control.connectors.authorize(slack["id"])
    assert "client-slack-1" in consent["authorization_url"]
    try:
        control.connectors.complete_authorization(slack["id"], {"state": consent["state"], "error": "access_denied"})
    except EngramError as error:
        assert error.status < 500
    control.connectors.remove(slack["id"])
    control.integrations.remove_oauth_client("slack")


def test_errors_carry_status_code_field_and_request_id(server, service):
    error = failure(lambda: service.memories.add({"text": "x", "importance": 7}))
    assert (error.status, error.code, error.field) == (400, "validation_error", "importance")
    assert error.request_id
    with ServiceClient(server.url, "eng_wrong_key_000000000000", end_user_id="alice", max_retries=0) as wrong:
        assert failure(lambda: wrong.memories.query({"query": "x"})).code == "unauthenticated"
    with pytest.raises(TypeError, match="no argument 'colour'"):
        service.memories.query({"query": "x"}, colour="blue")


def test_async_clients(server):
    async def scenario() -> None:
        async with AsyncServiceClient(
            server.url, server.api_key, project_id=server.project_id, end_user_id="carol", on_request=record
        ) as service:
            many = await service.memories.add_many([{"text": f"Carol's note {i}"} for i in range(60)])
            assert many["totals"]["created"] == 60
            assert (await service.memories.query({"query": "Carol's note"}))["memories"]
        async with AsyncControlClient(server.url, project_id=server.project_id, on_request=record) as control:
            await control.sign_in(server.email, server.password)
            assert [s async for s in control.sessions.list_all(limit=1)]
            created = await control.exports.create({"format": "json"})
            for _ in range(1200):
                if (await control.exports.get(created["id"]))["status"] == "completed":
                    break
                await asyncio.sleep(0.025)
            assert b"".join([chunk async for chunk in control.exports.download(created["id"])])

    asyncio.run(scenario())


def test_every_operation_was_sent():
    missing = sorted(set(OPERATIONS) - SENT)
    assert missing == [], f"operations no test above sends: {missing}"


def test_automation_with_a_scoped_api_key(server, control, local):
    """A key with webhooks:write creates a webhook without a person's session; a data-plane key is refused (403)."""
    scoped = control.keys.create(
        {"name": "deploy script", "project_id": server.project_id, "scopes": ["webhooks:read", "webhooks:write"]}
    )
    with ControlClient(server.url, api_key=scoped["key"], on_request=record) as automation:
        endpoint = automation.webhooks.create(
            {"name": "from a key", "url": f"{local.base}/hook", "events": ["memory.created"]}
        )
        assert endpoint["id"] in [e["id"] for e in automation.webhooks.list()["items"]]
    plain = control.keys.create({"name": "data plane only"})
    with ControlClient(server.url, api_key=plain["key"], project_id=server.project_id) as refused:
        error = failure(
            lambda: refused.webhooks.create(
                {"name": "refused", "url": f"{local.base}/hook", "events": ["memory.created"]}
            )
        )
    assert isinstance(error, PermissionError)
    control.webhooks.delete(endpoint["id"])
