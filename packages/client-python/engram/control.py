"""The control plane with a signed-in account: organizations, projects, keys, members, sessions, audit,
billing, exports and imports, webhooks, connectors and integrations. The access token is refreshed
before it expires and once after a 401. Answers are pydantic models (engram.models)."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from collections.abc import Callable
from typing import Any, BinaryIO

import httpx

from . import bodies, models
from ._operations import OPERATIONS
from ._plane import _Group, _Plane, transport_settings
from ._transport import AsyncTransport, SyncTransport
from .errors import EngramError

# Refresh this long before the access token expires, so that no request carries an expired one.
REFRESH_MARGIN_SECONDS = 30


class Auth(_Group):
    def login(self, body: bodies.AuthLoginBody, **params: Any) -> models.AuthLoginResult:
        return self._call("auth.login", body=body, **params)

    def refresh(self, body: bodies.AuthRefreshBody, **params: Any) -> models.AuthRefreshResult:
        return self._call("auth.refresh", body=body, **params)

    def logout(self, **params: Any) -> models.AuthLogoutResult:
        return self._call("auth.logout", **params)

    def catalogue(self, **params: Any) -> models.AuthCatalogueResult:
        return self._call("auth.catalogue", **params)

    def change_password(self, body: bodies.AuthChangePasswordBody, **params: Any) -> models.AuthChangePasswordResult:
        return self._call("auth.changePassword", body=body, **params)

    def reset_password(self, body: bodies.AuthResetPasswordBody, **params: Any) -> models.AuthResetPasswordResult:
        return self._call("auth.resetPassword", body=body, **params)


class Sessions(_Group):
    def list(self, **params: Any) -> models.SessionsListResult:
        return self._call("sessions.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("sessions.list", **params)

    def revoke(self, session_id: str | int, **params: Any) -> models.SessionsRevokeResult:
        return self._call("sessions.revoke", path={"session_id": session_id}, **params)


class Organizations(_Group):
    def create(self, body: bodies.OrganizationsCreateBody, **params: Any) -> models.OrganizationsCreateResult:
        return self._call("organizations.create", body=body, **params)

    def list(self, **params: Any) -> models.OrganizationsListResult:
        return self._call("organizations.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("organizations.list", **params)


class Projects(_Group):
    def list(self, **params: Any) -> models.ProjectsListResult:
        return self._call("projects.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("projects.list", **params)

    def create(self, body: bodies.ProjectsCreateBody, **params: Any) -> models.ProjectsCreateResult:
        return self._call("projects.create", body=body, **params)

    def get(self, project_id: str | int, **params: Any) -> models.ProjectsGetResult:
        return self._call("projects.get", path={"project_id": project_id}, **params)

    def update(
        self, project_id: str | int, body: bodies.ProjectsUpdateBody, **params: Any
    ) -> models.ProjectsUpdateResult:
        return self._call("projects.update", path={"project_id": project_id}, body=body, **params)

    def delete(self, project_id: str | int, **params: Any) -> models.ProjectsDeleteResult:
        return self._call("projects.delete", path={"project_id": project_id}, **params)


class Keys(_Group):
    def create(self, body: bodies.KeysCreateBody, **params: Any) -> models.KeysCreateResult:
        return self._call("keys.create", body=body, **params)

    def list(self, **params: Any) -> models.KeysListResult:
        return self._call("keys.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("keys.list", **params)

    def get(self, key_id: str | int, **params: Any) -> models.KeysGetResult:
        return self._call("keys.get", path={"key_id": key_id}, **params)

    def revoke(self, key_id: str | int, **params: Any) -> models.KeysRevokeResult:
        return self._call("keys.revoke", path={"key_id": key_id}, **params)

    def test(self, key_id: str | int, **params: Any) -> models.KeysTestResult:
        return self._call("keys.test", path={"key_id": key_id}, **params)

    def bulk_revoke(self, body: bodies.KeysBulkRevokeBody, **params: Any) -> models.KeysBulkRevokeResult:
        return self._call("keys.bulkRevoke", body=body, **params)


class Audit(_Group):
    def list(self, **params: Any) -> models.AuditListResult:
        return self._call("audit.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("audit.list", **params)


class Billing(_Group):
    def current_plan(self, **params: Any) -> models.BillingCurrentPlanResult:
        return self._call("billing.currentPlan", **params)


class Webhooks(_Group):
    def event_types(self, **params: Any) -> models.WebhooksEventTypesResult:
        return self._call("webhooks.eventTypes", **params)

    def create(self, body: bodies.WebhooksCreateBody, **params: Any) -> models.WebhooksCreateResult:
        return self._call("webhooks.create", body=body, **params)

    def list(self, **params: Any) -> models.WebhooksListResult:
        return self._call("webhooks.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("webhooks.list", **params)

    def get(self, endpoint_id: str | int, **params: Any) -> models.WebhooksGetResult:
        return self._call("webhooks.get", path={"endpoint_id": endpoint_id}, **params)

    def update(
        self, endpoint_id: str | int, body: bodies.WebhooksUpdateBody, **params: Any
    ) -> models.WebhooksUpdateResult:
        return self._call("webhooks.update", path={"endpoint_id": endpoint_id}, body=body, **params)

    def delete(self, endpoint_id: str | int, **params: Any) -> models.WebhooksDeleteResult:
        return self._call("webhooks.delete", path={"endpoint_id": endpoint_id}, **params)

    def health(self, endpoint_id: str | int, **params: Any) -> models.WebhooksHealthResult:
        return self._call("webhooks.health", path={"endpoint_id": endpoint_id}, **params)

    def pause(self, endpoint_id: str | int, **params: Any) -> models.WebhooksPauseResult:
        return self._call("webhooks.pause", path={"endpoint_id": endpoint_id}, **params)

    def resume(self, endpoint_id: str | int, **params: Any) -> models.WebhooksResumeResult:
        return self._call("webhooks.resume", path={"endpoint_id": endpoint_id}, **params)

    def rotate_secret(self, endpoint_id: str | int, **params: Any) -> models.WebhooksRotateSecretResult:
        return self._call("webhooks.rotateSecret", path={"endpoint_id": endpoint_id}, **params)

    def test(self, endpoint_id: str | int, **params: Any) -> models.WebhooksTestResult:
        return self._call("webhooks.test", path={"endpoint_id": endpoint_id}, **params)

    def replay(
        self, endpoint_id: str | int, body: bodies.WebhooksReplayBody, **params: Any
    ) -> models.WebhooksReplayResult:
        return self._call("webhooks.replay", path={"endpoint_id": endpoint_id}, body=body, **params)

    def deliveries(self, endpoint_id: str | int, **params: Any) -> models.WebhooksDeliveriesResult:
        return self._call("webhooks.deliveries", path={"endpoint_id": endpoint_id}, **params)

    def deliveries_all(self, endpoint_id: str | int, **params: Any) -> Any:
        return self._pages("webhooks.deliveries", path={"endpoint_id": endpoint_id}, **params)

    def delivery(self, endpoint_id: str | int, delivery_id: str | int, **params: Any) -> models.WebhooksDeliveryResult:
        return self._call("webhooks.delivery", path={"endpoint_id": endpoint_id, "delivery_id": delivery_id}, **params)

    def retry_delivery(
        self, endpoint_id: str | int, delivery_id: str | int, **params: Any
    ) -> models.WebhooksRetryDeliveryResult:
        return self._call(
            "webhooks.retryDelivery", path={"endpoint_id": endpoint_id, "delivery_id": delivery_id}, **params
        )


class Exports(_Group):
    def create(self, body: bodies.ExportsCreateBody, **params: Any) -> models.ExportsCreateResult:
        return self._call("exports.create", body=body, **params)

    def list(self, **params: Any) -> models.ExportsListResult:
        return self._call("exports.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("exports.list", **params)

    def get(self, id: str | int, **params: Any) -> models.ExportsGetResult:
        return self._call("exports.get", path={"id": id}, **params)

    def delete(self, id: str | int, **params: Any) -> models.ExportsDeleteResult:
        return self._call("exports.delete", path={"id": id}, **params)

    def cancel(self, id: str | int, **params: Any) -> models.ExportsCancelResult:
        return self._call("exports.cancel", path={"id": id}, **params)

    def download(self, id: str | int, **params: Any) -> Any:
        return self._client.transport.download("exports.download", path={"id": id}, **params)


class Imports(_Group):
    def create(self, file: bytes | BinaryIO, **params: Any) -> models.ImportsCreateResult:
        return self._call("imports.create", content=file, content_type="application/octet-stream", **params)

    def list(self, **params: Any) -> models.ImportsListResult:
        return self._call("imports.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("imports.list", **params)

    def get(self, id: str | int, **params: Any) -> models.ImportsGetResult:
        return self._call("imports.get", path={"id": id}, **params)

    def cancel(self, id: str | int, **params: Any) -> models.ImportsCancelResult:
        return self._call("imports.cancel", path={"id": id}, **params)


class Members(_Group):
    def invite(self, body: bodies.MembersInviteBody, **params: Any) -> models.MembersInviteResult:
        return self._call("members.invite", body=body, **params)

    def accept_invitation(
        self, body: bodies.MembersAcceptInvitationBody, **params: Any
    ) -> models.MembersAcceptInvitationResult:
        return self._call("members.acceptInvitation", body=body, **params)

    def invitations(self, **params: Any) -> models.MembersInvitationsResult:
        return self._call("members.invitations", **params)

    def all_invitations(self, **params: Any) -> Any:
        return self._pages("members.invitations", **params)

    def revoke_invitation(self, invitation_id: str | int, **params: Any) -> models.MembersRevokeInvitationResult:
        return self._call("members.revokeInvitation", path={"invitation_id": invitation_id}, **params)

    def list(self, **params: Any) -> models.MembersListResult:
        return self._call("members.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("members.list", **params)

    def get(self, user_id: str | int, **params: Any) -> models.MembersGetResult:
        return self._call("members.get", path={"user_id": user_id}, **params)

    def update(self, user_id: str | int, body: bodies.MembersUpdateBody, **params: Any) -> models.MembersUpdateResult:
        return self._call("members.update", path={"user_id": user_id}, body=body, **params)

    def remove(self, user_id: str | int, **params: Any) -> models.MembersRemoveResult:
        return self._call("members.remove", path={"user_id": user_id}, **params)

    def password_reset_link(self, user_id: str | int, **params: Any) -> models.MembersPasswordResetLinkResult:
        return self._call("members.passwordResetLink", path={"user_id": user_id}, **params)


class Connectors(_Group):
    def providers(self, **params: Any) -> models.ConnectorsProvidersResult:
        return self._call("connectors.providers", **params)

    def provider(self, provider: str | int, **params: Any) -> models.ConnectorsProviderResult:
        return self._call("connectors.provider", path={"provider": provider}, **params)

    def create(self, body: bodies.ConnectorsCreateBody, **params: Any) -> models.ConnectorsCreateResult:
        return self._call("connectors.create", body=body, **params)

    def list(self, **params: Any) -> models.ConnectorsListResult:
        return self._call("connectors.list", **params)

    def list_all(self, **params: Any) -> Any:
        return self._pages("connectors.list", **params)

    def get(self, connection_id: str | int, **params: Any) -> models.ConnectorsGetResult:
        return self._call("connectors.get", path={"connection_id": connection_id}, **params)

    def update(
        self, connection_id: str | int, body: bodies.ConnectorsUpdateBody, **params: Any
    ) -> models.ConnectorsUpdateResult:
        return self._call("connectors.update", path={"connection_id": connection_id}, body=body, **params)

    def remove(self, connection_id: str | int, **params: Any) -> models.ConnectorsRemoveResult:
        return self._call("connectors.remove", path={"connection_id": connection_id}, **params)

    def repair(self, connection_id: str | int, **params: Any) -> models.ConnectorsRepairResult:
        return self._call("connectors.repair", path={"connection_id": connection_id}, **params)

    def authorize(self, connection_id: str | int, **params: Any) -> models.ConnectorsAuthorizeResult:
        return self._call("connectors.authorize", path={"connection_id": connection_id}, **params)

    def complete_authorization(
        self, connection_id: str | int, body: bodies.ConnectorsCompleteAuthorizationBody, **params: Any
    ) -> models.ConnectorsCompleteAuthorizationResult:
        return self._call(
            "connectors.completeAuthorization", path={"connection_id": connection_id}, body=body, **params
        )

    def purge(self, connection_id: str | int, **params: Any) -> models.ConnectorsPurgeResult:
        return self._call("connectors.purge", path={"connection_id": connection_id}, **params)

    def configuration(self, connection_id: str | int, **params: Any) -> models.ConnectorsConfigurationResult:
        return self._call("connectors.configuration", path={"connection_id": connection_id}, **params)

    def set_configuration(
        self, connection_id: str | int, body: bodies.ConnectorsSetConfigurationBody, **params: Any
    ) -> models.ConnectorsSetConfigurationResult:
        return self._call("connectors.setConfiguration", path={"connection_id": connection_id}, body=body, **params)

    def sync(self, connection_id: str | int, **params: Any) -> models.ConnectorsSyncResult:
        return self._call("connectors.sync", path={"connection_id": connection_id}, **params)

    def syncs(self, connection_id: str | int, **params: Any) -> models.ConnectorsSyncsResult:
        return self._call("connectors.syncs", path={"connection_id": connection_id}, **params)

    def syncs_all(self, connection_id: str | int, **params: Any) -> Any:
        return self._pages("connectors.syncs", path={"connection_id": connection_id}, **params)

    def get_sync(self, sync_id: str | int, **params: Any) -> models.ConnectorsGetSyncResult:
        return self._call("connectors.getSync", path={"sync_id": sync_id}, **params)

    def cancel_sync(self, sync_id: str | int, **params: Any) -> models.ConnectorsCancelSyncResult:
        return self._call("connectors.cancelSync", path={"sync_id": sync_id}, **params)

    def objects(self, connection_id: str | int, **params: Any) -> models.ConnectorsObjectsResult:
        return self._call("connectors.objects", path={"connection_id": connection_id}, **params)

    def objects_all(self, connection_id: str | int, **params: Any) -> Any:
        return self._pages("connectors.objects", path={"connection_id": connection_id}, **params)

    def insights(self, **params: Any) -> models.ConnectorsInsightsResult:
        return self._call("connectors.insights", **params)


class Integrations(_Group):
    def list(self, **params: Any) -> models.IntegrationsListResult:
        return self._call("integrations.list", **params)

    def enable(self, provider: str | int, **params: Any) -> models.IntegrationsEnableResult:
        return self._call("integrations.enable", path={"provider": provider}, **params)

    def disable(self, provider: str | int, **params: Any) -> models.IntegrationsDisableResult:
        return self._call("integrations.disable", path={"provider": provider}, **params)

    def overview(self, **params: Any) -> models.IntegrationsOverviewResult:
        return self._call("integrations.overview", **params)

    def set_oauth_client(
        self, provider: str, body: bodies.IntegrationsSetOAuthClientBody, **params: Any
    ) -> models.IntegrationsSetOAuthClientResult:
        return self._call("integrations.setOAuthClient", path={"provider": provider}, body=body, **params)

    def remove_oauth_client(self, provider: str, **params: Any) -> models.IntegrationsRemoveOAuthClientResult:
        return self._call("integrations.removeOAuthClient", path={"provider": provider}, **params)


class _ControlPlane(_Plane):
    anonymous: Any
    _api_key: str | None

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
        # An API key with control-plane scopes (automation without a person's session) goes as X-API-Key instead.
        if self._api_key:
            return {"x-api-key": self._api_key}
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
    """Blocking control-plane client: ``ControlClient(base_url)`` then ``sign_in(email, password)``, or
    ``ControlClient(base_url, api_key=...)`` with a key carrying control-plane scopes (webhooks, exports, ...)."""

    def __init__(
        self,
        base_url: str,
        *,
        tokens: dict[str, Any] | None = None,
        organization_id: str | None = None,
        project_id: str | None = None,
        on_tokens: Callable[[dict[str, Any]], None] | None = None,
        http: httpx.Client | None = None,
        api_key: str | None = None,
        **settings: Any,
    ) -> None:
        defaults = {"organization_id": organization_id, "project_id": project_id}
        shared = http or httpx.Client()
        self.anonymous = SyncTransport(transport_settings(base_url, defaults, settings), dict, http=shared)
        self.transport = SyncTransport(
            transport_settings(base_url, defaults, settings), self._headers, self._refresh, http=shared
        )
        self._on_tokens = on_tokens
        self._api_key = api_key
        self._lock = threading.Lock()
        self.tokens: dict[str, Any] | None = None
        if tokens:
            self._use_tokens(tokens, False)
        self._groups()

    def sign_in(self, email: str, password: str, *, scopes: list[str] | None = None, **params: Any) -> dict[str, Any]:
        """Signs in; later calls carry the session's tokens (refreshed as needed)."""
        body = {"email": email, "password": password, **({"scopes": scopes} if scopes else {})}
        tokens = self.anonymous.call("auth.login", body=body, **params)
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
                self._use_tokens(
                    self.anonymous.call("auth.refresh", body={"refresh_token": current["refresh_token"]}), True
                )
                return True
            except EngramError:
                return False

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> ControlClient:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


class AsyncControlClient(_ControlPlane):
    """The same surface as ControlClient; every method is awaited and list_all iterators are async."""

    # Typed Any: ControlClient's groups are typed by their blocking answers (the same models at run time).
    auth: Any
    sessions: Any
    organizations: Any
    projects: Any
    keys: Any
    audit: Any
    billing: Any
    webhooks: Any
    exports: Any
    imports: Any
    members: Any
    connectors: Any
    integrations: Any

    def __init__(
        self,
        base_url: str,
        *,
        tokens: dict[str, Any] | None = None,
        organization_id: str | None = None,
        project_id: str | None = None,
        on_tokens: Callable[[dict[str, Any]], None] | None = None,
        http: httpx.AsyncClient | None = None,
        api_key: str | None = None,
        **settings: Any,
    ) -> None:
        defaults = {"organization_id": organization_id, "project_id": project_id}
        shared = http or httpx.AsyncClient()

        async def none() -> dict[str, str]:
            return {}

        self.anonymous = AsyncTransport(transport_settings(base_url, defaults, settings), none, http=shared)
        self.transport = AsyncTransport(
            transport_settings(base_url, defaults, settings), self._headers, self._refresh, http=shared
        )
        self._on_tokens = on_tokens
        self._api_key = api_key
        self._lock = asyncio.Lock()
        self.tokens: dict[str, Any] | None = None
        if tokens:
            self._use_tokens(tokens, False)
        self._groups()

    async def sign_in(
        self, email: str, password: str, *, scopes: list[str] | None = None, **params: Any
    ) -> dict[str, Any]:
        body = {"email": email, "password": password, **({"scopes": scopes} if scopes else {})}
        tokens = await self.anonymous.call("auth.login", body=body, **params)
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
                self._use_tokens(
                    await self.anonymous.call("auth.refresh", body={"refresh_token": current["refresh_token"]}), True
                )
                return True
            except EngramError:
                return False

    async def close(self) -> None:
        await self.transport.close()

    async def __aenter__(self) -> AsyncControlClient:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()
