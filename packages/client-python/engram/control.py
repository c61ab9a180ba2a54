"""The control plane with a signed-in account: organizations, projects, keys, members, sessions, audit,
billing, exports and imports, webhooks, connectors and integrations. The access token is refreshed
before it expires and once after a 401. Answers are the server's JSON (dicts)."""
from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from typing import Any, BinaryIO, Callable

import httpx

from ._operations import OPERATIONS
from . import models
from ._plane import _Group, _Plane, transport_settings
from ._transport import AsyncTransport, SyncTransport
from .errors import EngramError

# Refresh this long before the access token expires, so that no request carries an expired one.
REFRESH_MARGIN_SECONDS = 30


class Auth(_Group):
    def login(self, body: models.PostAuthLoginBody, **params: Any) -> Any: return self._call("postAuthLogin", body=body, **params)
    def refresh(self, body: models.PostAuthRefreshBody, **params: Any) -> Any: return self._call("postAuthRefresh", body=body, **params)
    def logout(self, **params: Any) -> Any: return self._call("postAuthLogout", **params)
    def catalogue(self, **params: Any) -> Any: return self._call("getAuthCatalogue", **params)
    def change_password(self, body: models.PostAuthPasswordBody, **params: Any) -> Any: return self._call("postAuthPassword", body=body, **params)
    def reset_password(self, body: models.PostAuthPasswordResetBody, **params: Any) -> Any: return self._call("postAuthPasswordReset", body=body, **params)


class Sessions(_Group):
    def list(self, **params: Any) -> Any: return self._call("getAuthSessions", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getAuthSessions", **params)
    def revoke(self, session_id: str | int, **params: Any) -> Any: return self._call("postAuthSessionsBySessionIdRevoke", path={"session_id": session_id}, **params)


class Organizations(_Group):
    def create(self, body: models.PostOrganizationsBody, **params: Any) -> Any: return self._call("postOrganizations", body=body, **params)
    def list(self, **params: Any) -> Any: return self._call("getOrganizations", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getOrganizations", **params)


class Projects(_Group):
    def list(self, **params: Any) -> Any: return self._call("getOrgProjects", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getOrgProjects", **params)
    def create(self, body: models.PostOrgProjectsBody, **params: Any) -> Any: return self._call("postOrgProjects", body=body, **params)
    def get(self, project_id: str | int, **params: Any) -> Any: return self._call("getOrgProjectsByProjectId", path={"project_id": project_id}, **params)
    def update(self, project_id: str | int, body: models.PatchOrgProjectsByProjectIdBody, **params: Any) -> Any: return self._call("patchOrgProjectsByProjectId", path={"project_id": project_id}, body=body, **params)
    def delete(self, project_id: str | int, **params: Any) -> Any: return self._call("deleteOrgProjectsByProjectId", path={"project_id": project_id}, **params)


class Keys(_Group):
    def create(self, body: models.PostOrgApiKeysBody, **params: Any) -> Any: return self._call("postOrgApiKeys", body=body, **params)
    def list(self, **params: Any) -> Any: return self._call("getOrgApiKeys", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getOrgApiKeys", **params)
    def get(self, key_id: str | int, **params: Any) -> Any: return self._call("getOrgApiKeysByKeyId", path={"key_id": key_id}, **params)
    def revoke(self, key_id: str | int, **params: Any) -> Any: return self._call("deleteOrgApiKeysByKeyId", path={"key_id": key_id}, **params)
    def test(self, key_id: str | int, **params: Any) -> Any: return self._call("postOrgApiKeysByKeyIdTest", path={"key_id": key_id}, **params)
    def bulk_revoke(self, body: models.PostOrgApiKeysBulkRevokeBody, **params: Any) -> Any: return self._call("postOrgApiKeysBulkRevoke", body=body, **params)


class Audit(_Group):
    def list(self, **params: Any) -> Any: return self._call("getAdminTeamAuditLogs", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getAdminTeamAuditLogs", **params)


class Billing(_Group):
    def current_plan(self, **params: Any) -> Any: return self._call("getOrgBillingCurrentPlan", **params)


class Webhooks(_Group):
    def event_types(self, **params: Any) -> Any: return self._call("getOrgWebhooksEventTypes", **params)
    def create(self, body: models.PostOrgWebhooksBody, **params: Any) -> Any: return self._call("postOrgWebhooks", body=body, **params)
    def list(self, **params: Any) -> Any: return self._call("getOrgWebhooks", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getOrgWebhooks", **params)
    def get(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("getOrgWebhooksByEndpointId", path={"endpoint_id": endpoint_id}, **params)
    def update(self, endpoint_id: str | int, body: models.PatchOrgWebhooksByEndpointIdBody, **params: Any) -> Any: return self._call("patchOrgWebhooksByEndpointId", path={"endpoint_id": endpoint_id}, body=body, **params)
    def delete(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("deleteOrgWebhooksByEndpointId", path={"endpoint_id": endpoint_id}, **params)
    def health(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("getOrgWebhooksByEndpointIdHealth", path={"endpoint_id": endpoint_id}, **params)
    def pause(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdPause", path={"endpoint_id": endpoint_id}, **params)
    def resume(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdResume", path={"endpoint_id": endpoint_id}, **params)
    def rotate_secret(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdRotateSecret", path={"endpoint_id": endpoint_id}, **params)
    def test(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdTest", path={"endpoint_id": endpoint_id}, **params)
    def replay(self, endpoint_id: str | int, body: models.PostOrgWebhooksByEndpointIdReplayBody, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdReplay", path={"endpoint_id": endpoint_id}, body=body, **params)
    def deliveries(self, endpoint_id: str | int, **params: Any) -> Any: return self._call("getOrgWebhooksByEndpointIdDeliveries", path={"endpoint_id": endpoint_id}, **params)
    def deliveries_all(self, endpoint_id: str | int, **params: Any) -> Any: return self._pages("getOrgWebhooksByEndpointIdDeliveries", path={"endpoint_id": endpoint_id}, **params)
    def delivery(self, endpoint_id: str | int, delivery_id: str | int, **params: Any) -> Any: return self._call("getOrgWebhooksByEndpointIdDeliveriesByDeliveryId", path={"endpoint_id": endpoint_id, "delivery_id": delivery_id}, **params)
    def retry_delivery(self, endpoint_id: str | int, delivery_id: str | int, **params: Any) -> Any: return self._call("postOrgWebhooksByEndpointIdDeliveriesByDeliveryIdRetry", path={"endpoint_id": endpoint_id, "delivery_id": delivery_id}, **params)


class Exports(_Group):
    def create(self, body: models.PostExportsBody, **params: Any) -> Any: return self._call("postExports", body=body, **params)
    def list(self, **params: Any) -> Any: return self._call("getExports", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getExports", **params)
    def get(self, id: str | int, **params: Any) -> Any: return self._call("getExportsById", path={"id": id}, **params)
    def delete(self, id: str | int, **params: Any) -> Any: return self._call("deleteExportsById", path={"id": id}, **params)
    def cancel(self, id: str | int, **params: Any) -> Any: return self._call("postExportsByIdCancel", path={"id": id}, **params)
    def download(self, id: str | int, **params: Any) -> Any: return self._client.transport.download("getExportsByIdDownload", path={"id": id}, **params)


class Imports(_Group):
    def create(self, file: bytes | BinaryIO, **params: Any) -> Any: return self._call("postImports", content=file, content_type="application/octet-stream", **params)
    def list(self, **params: Any) -> Any: return self._call("getImports", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getImports", **params)
    def get(self, id: str | int, **params: Any) -> Any: return self._call("getImportsById", path={"id": id}, **params)
    def cancel(self, id: str | int, **params: Any) -> Any: return self._call("postImportsByIdCancel", path={"id": id}, **params)


class Members(_Group):
    def invite(self, body: models.PostOrgInvitationsBody, **params: Any) -> Any: return self._call("postOrgInvitations", body=body, **params)
    def accept_invitation(self, body: models.PostInvitationsAcceptBody, **params: Any) -> Any: return self._call("postInvitationsAccept", body=body, **params)
    def invitations(self, **params: Any) -> Any: return self._call("getOrgInvitations", **params)
    def all_invitations(self, **params: Any) -> Any: return self._pages("getOrgInvitations", **params)
    def revoke_invitation(self, invitation_id: str | int, **params: Any) -> Any: return self._call("deleteOrgInvitationsByInvitationId", path={"invitation_id": invitation_id}, **params)
    def list(self, **params: Any) -> Any: return self._call("getOrgMembers", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getOrgMembers", **params)
    def get(self, user_id: str | int, **params: Any) -> Any: return self._call("getOrgMembersByUserId", path={"user_id": user_id}, **params)
    def update(self, user_id: str | int, body: models.PatchOrgMembersByUserIdBody, **params: Any) -> Any: return self._call("patchOrgMembersByUserId", path={"user_id": user_id}, body=body, **params)
    def remove(self, user_id: str | int, **params: Any) -> Any: return self._call("deleteOrgMembersByUserId", path={"user_id": user_id}, **params)
    def password_reset_link(self, user_id: str | int, **params: Any) -> Any: return self._call("postOrgMembersByUserIdPasswordReset", path={"user_id": user_id}, **params)


class Connectors(_Group):
    def providers(self, **params: Any) -> Any: return self._call("getConnectorsProviders", **params)
    def provider(self, provider: str | int, **params: Any) -> Any: return self._call("getConnectorsProvidersByProvider", path={"provider": provider}, **params)
    def create(self, body: models.PostConnectorsConnectionsBody, **params: Any) -> Any: return self._call("postConnectorsConnections", body=body, **params)
    def list(self, **params: Any) -> Any: return self._call("getConnectorsConnections", **params)
    def list_all(self, **params: Any) -> Any: return self._pages("getConnectorsConnections", **params)
    def get(self, connection_id: str | int, **params: Any) -> Any: return self._call("getConnectorsConnectionsByConnectionId", path={"connection_id": connection_id}, **params)
    def update(self, connection_id: str | int, body: models.PatchConnectorsConnectionsByConnectionIdBody, **params: Any) -> Any: return self._call("patchConnectorsConnectionsByConnectionId", path={"connection_id": connection_id}, body=body, **params)
    def remove(self, connection_id: str | int, **params: Any) -> Any: return self._call("deleteConnectorsConnectionsByConnectionId", path={"connection_id": connection_id}, **params)
    def repair(self, connection_id: str | int, **params: Any) -> Any: return self._call("postConnectorsConnectionsByConnectionIdRepair", path={"connection_id": connection_id}, **params)
    def authorize(self, connection_id: str | int, **params: Any) -> Any: return self._call("postConnectorsConnectionsByConnectionIdAuthorize", path={"connection_id": connection_id}, **params)
    def complete_authorization(self, connection_id: str | int, body: models.PostConnectorsConnectionsByConnectionIdCallbackBody, **params: Any) -> Any: return self._call("postConnectorsConnectionsByConnectionIdCallback", path={"connection_id": connection_id}, body=body, **params)
    def purge(self, connection_id: str | int, **params: Any) -> Any: return self._call("postConnectorsConnectionsByConnectionIdPurge", path={"connection_id": connection_id}, **params)
    def configuration(self, connection_id: str | int, **params: Any) -> Any: return self._call("getConnectorsConnectionsByConnectionIdConfiguration", path={"connection_id": connection_id}, **params)
    def set_configuration(self, connection_id: str | int, body: models.PutConnectorsConnectionsByConnectionIdConfigurationBody, **params: Any) -> Any: return self._call("putConnectorsConnectionsByConnectionIdConfiguration", path={"connection_id": connection_id}, body=body, **params)
    def sync(self, connection_id: str | int, **params: Any) -> Any: return self._call("postConnectorsConnectionsByConnectionIdSync", path={"connection_id": connection_id}, **params)
    def syncs(self, connection_id: str | int, **params: Any) -> Any: return self._call("getConnectorsConnectionsByConnectionIdSyncs", path={"connection_id": connection_id}, **params)
    def syncs_all(self, connection_id: str | int, **params: Any) -> Any: return self._pages("getConnectorsConnectionsByConnectionIdSyncs", path={"connection_id": connection_id}, **params)
    def get_sync(self, sync_id: str | int, **params: Any) -> Any: return self._call("getConnectorsSyncsBySyncId", path={"sync_id": sync_id}, **params)
    def cancel_sync(self, sync_id: str | int, **params: Any) -> Any: return self._call("postConnectorsSyncsBySyncIdCancel", path={"sync_id": sync_id}, **params)
    def objects(self, connection_id: str | int, **params: Any) -> Any: return self._call("getConnectorsConnectionsByConnectionIdObjects", path={"connection_id": connection_id}, **params)
    def objects_all(self, connection_id: str | int, **params: Any) -> Any: return self._pages("getConnectorsConnectionsByConnectionIdObjects", path={"connection_id": connection_id}, **params)
    def insights(self, **params: Any) -> Any: return self._call("getConnectorsInsights", **params)


class Integrations(_Group):
    def list(self, **params: Any) -> Any: return self._call("getIntegrations", **params)
    def enable(self, provider: str | int, **params: Any) -> Any: return self._call("postIntegrationsByProviderEnable", path={"provider": provider}, **params)
    def disable(self, provider: str | int, **params: Any) -> Any: return self._call("postIntegrationsByProviderDisable", path={"provider": provider}, **params)
    def overview(self, **params: Any) -> Any: return self._call("getIntegrationsOverview", **params)
    def set_oauth_client(self, provider: str, body: models.PutIntegrationsByProviderOauthClientBody, **params: Any) -> Any: return self._call("putIntegrationsByProviderOauthClient", path={"provider": provider}, body=body, **params)
    def remove_oauth_client(self, provider: str, **params: Any) -> Any: return self._call("deleteIntegrationsByProviderOauthClient", path={"provider": provider}, **params)


class _ControlPlane(_Plane):
    anonymous: Any

    def _groups(self) -> None:
        self.auth = Auth(self)
        self.sessions = Sessions(self)
        self.organizations = Organizations(self)
        self.projects = Projects(self)
        self.keys = Keys(self)
        self.audit = Audit(self)
        self.billing = Billing(self)
        self.webhooks = Webhooks(self)
        self.exports = Exports(self)
        self.imports = Imports(self)
        self.members = Members(self)
        self.connectors = Connectors(self)
        self.integrations = Integrations(self)

    def _call(self, operation_id: str, **kwargs: Any) -> Any:
        transport = self.anonymous if OPERATIONS[operation_id].anonymous else self.transport
        return transport.call(operation_id, **kwargs)

    def _use_tokens(self, tokens: dict[str, Any], fresh: bool) -> None:
        self.tokens = tokens
        self._expires_at = time.time() + tokens["expires_in"] if fresh else _expiry_of(tokens["access_token"])
        if fresh and self._on_tokens:
            self._on_tokens(tokens)

    def _bearer(self) -> dict[str, str]:
        return {"authorization": f"Bearer {self.tokens['access_token']}"} if self.tokens else {}

    def _expiring(self) -> bool:
        return self.tokens is not None and time.time() > self._expires_at - REFRESH_MARGIN_SECONDS


def _expiry_of(access_token: str) -> float:
    """The exp claim of a JWT (0 when unreadable: refresh first)."""
    try:
        payload = access_token.split(".")[1]
        return float(json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))["exp"])
    except (IndexError, ValueError, KeyError):
        return 0.0


class ControlClient(_ControlPlane):
    """Blocking control-plane client: ``ControlClient(base_url)`` then ``sign_in(email, password)``."""

    def __init__(self, base_url: str, *, tokens: dict[str, Any] | None = None, organization_id: str | None = None,
                 project_id: str | None = None, on_tokens: Callable[[dict[str, Any]], None] | None = None,
                 http: httpx.Client | None = None, **settings: Any) -> None:
        defaults = {"organization_id": organization_id, "project_id": project_id}
        shared = http or httpx.Client()
        self.anonymous = SyncTransport(transport_settings(base_url, defaults, settings), dict, http=shared)
        self.transport = SyncTransport(transport_settings(base_url, defaults, settings), self._headers, self._refresh, http=shared)
        self._on_tokens = on_tokens
        self._lock = threading.Lock()
        self.tokens: dict[str, Any] | None = None
        if tokens:
            self._use_tokens(tokens, False)
        self._groups()

    def sign_in(self, email: str, password: str, *, scopes: list[str] | None = None, **params: Any) -> dict[str, Any]:
        """Signs in; later calls carry the session's tokens (refreshed as needed)."""
        body = {"email": email, "password": password, **({"scopes": scopes} if scopes else {})}
        tokens = self.anonymous.call("postAuthLogin", body=body, **params)
        self._use_tokens(tokens, True)
        return tokens

    def _headers(self) -> dict[str, str]:
        if self._expiring():
            self._refresh()
        return self._bearer()

    def _refresh(self) -> bool:
        current = self.tokens
        with self._lock:
            if self.tokens is not current:  # another thread refreshed meanwhile
                return True
            if not current:
                return False
            try:
                self._use_tokens(self.anonymous.call("postAuthRefresh", body={"refresh_token": current["refresh_token"]}), True)
                return True
            except EngramError:
                return False

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> "ControlClient":
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncControlClient(_ControlPlane):
    """The same surface as ControlClient; every method is awaited and list_all iterators are async."""

    def __init__(self, base_url: str, *, tokens: dict[str, Any] | None = None, organization_id: str | None = None,
                 project_id: str | None = None, on_tokens: Callable[[dict[str, Any]], None] | None = None,
                 http: httpx.AsyncClient | None = None, **settings: Any) -> None:
        defaults = {"organization_id": organization_id, "project_id": project_id}
        shared = http or httpx.AsyncClient()

        async def none() -> dict[str, str]:
            return {}

        self.anonymous = AsyncTransport(transport_settings(base_url, defaults, settings), none, http=shared)
        self.transport = AsyncTransport(transport_settings(base_url, defaults, settings), self._headers, self._refresh, http=shared)
        self._on_tokens = on_tokens
        self._lock = asyncio.Lock()
        self.tokens: dict[str, Any] | None = None
        if tokens:
            self._use_tokens(tokens, False)
        self._groups()

    async def sign_in(self, email: str, password: str, *, scopes: list[str] | None = None, **params: Any) -> dict[str, Any]:
        body = {"email": email, "password": password, **({"scopes": scopes} if scopes else {})}
        tokens = await self.anonymous.call("postAuthLogin", body=body, **params)
        self._use_tokens(tokens, True)
        return tokens

    async def _headers(self) -> dict[str, str]:
        if self._expiring():
            await self._refresh()
        return self._bearer()

    async def _refresh(self) -> bool:
        current = self.tokens
        async with self._lock:
            if self.tokens is not current:
                return True
            if not current:
                return False
            try:
                self._use_tokens(await self.anonymous.call("postAuthRefresh", body={"refresh_token": current["refresh_token"]}), True)
                return True
            except EngramError:
                return False

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> "AsyncControlClient":
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
