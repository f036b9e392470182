"""Headers every answer of the service carries, whoever wrote the answer.

A route, an error handler, a middleware's refusal or the stored-proof fast
path: each answer leaves with ``X-Content-Type-Options: nosniff`` (a browser
never guesses a record, a frame or a problem document to be HTML), and, unless
it set its own, a Content-Security-Policy that lets nothing load, run or frame
it (a JSON download opened in a tab stays inert). Pages set the policy they
need. The interactive API documents (``/docs``, ``/redoc``) load their own
scripts and get only ``nosniff``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["PAGE_POLICY", "RESOURCE_POLICY", "SecurityHeaders"]

PAGE_POLICY = (
    "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
"""The policy of the web interface's pages (and its error pages)."""
RESOURCE_POLICY = "default-src 'none'; frame-ancestors 'none'; sandbox"
"""The policy of everything else: JSON, frames, downloads."""

_NOSNIFF = (b"x-content-type-options", b"nosniff")
_RESOURCE = (b"content-security-policy", RESOURCE_POLICY.encode())
_OWN_SCRIPTS = frozenset({"/docs", "/redoc", "/docs/oauth2-redirect"})


class SecurityHeaders:
    """Add the headers above to every HTTP answer that lacks them (a plain ASGI middleware)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        policy = scope["path"] not in _OWN_SCRIPTS

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                names = {name.lower() for name, _ in headers}
                if _NOSNIFF[0] not in names:
                    headers.append(_NOSNIFF)
                if policy and _RESOURCE[0] not in names:
                    headers.append(_RESOURCE)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, sending)
