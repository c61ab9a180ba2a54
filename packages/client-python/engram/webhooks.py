"""Verifies a webhook delivery as the server signs it (Standard Webhooks): `webhook-signature` holds
`v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<body>">` under the endpoint's whsec_
secret, one per active secret (two while a rotated one overlaps)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import Mapping
from typing import Any

DEFAULT_TOLERANCE_SECONDS = 300


class WebhookVerificationError(Exception):
    pass


def verify_webhook(
    payload: bytes | str,
    headers: Mapping[str, str],
    secret: str,
    *,
    tolerance_seconds: int = DEFAULT_TOLERANCE_SECONDS,
    now: float | None = None,
) -> dict[str, Any]:
    """The delivered event when one of its signatures matches the secret and its timestamp is recent; raises otherwise."""
    lowered = {k.lower(): v for k, v in headers.items()}
    message_id, timestamp, signatures = (
        lowered.get(h) for h in ("webhook-id", "webhook-timestamp", "webhook-signature")
    )
    if not message_id or not timestamp or not signatures:
        raise WebhookVerificationError("Missing webhook-id, webhook-timestamp or webhook-signature")
    try:
        seconds = int(timestamp)
    except ValueError as error:
        raise WebhookVerificationError("The webhook timestamp is not a number") from error
    if abs((time.time() if now is None else now) - seconds) > tolerance_seconds:
        raise WebhookVerificationError("The webhook timestamp is outside the tolerance")
    body = payload.decode() if isinstance(payload, bytes) else payload
    key = base64.b64decode(secret.removeprefix("whsec_"))
    expected = base64.b64encode(
        hmac.new(key, f"{message_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    ).decode()
    for candidate in signatures.split(" "):
        version, _, signature = candidate.partition(",")
        if version == "v1" and hmac.compare_digest(signature, expected):
            return json.loads(body)
    raise WebhookVerificationError("No webhook signature matches the secret")
