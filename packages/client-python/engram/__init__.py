"""Official Python client of the Engram memory service."""

from . import models
from .control import AsyncControlClient, ControlClient
from .errors import (
    AuthenticationError,
    ConflictError,
    EngramError,
    NotFoundError,
    PermissionError,
    RateLimitError,
    ValidationError,
)
from .service import AsyncServiceClient, ServiceClient
from .webhooks import WebhookVerificationError, verify_webhook

__version__ = "0.1.0"
__all__ = [
    "ServiceClient",
    "AsyncServiceClient",
    "ControlClient",
    "AsyncControlClient",
    "EngramError",
    "ValidationError",
    "AuthenticationError",
    "PermissionError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "verify_webhook",
    "WebhookVerificationError",
    "models",
    "__version__",
]
