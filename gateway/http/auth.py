"""Who may ask: Kubernetes' own answer, cached.

The gateway serves exactly what ``kubectl get hypervisors`` would show, project and
user IDs included, so it lets in exactly the callers the cluster would: a bearer
token is checked with a TokenReview, and the user it names with a
SubjectAccessReview for ``list`` on ``hypervisors.kvm.cloud.sap``.

Decisions are cached under a hash of the token (never the token itself): allowed
for minutes, denied and invalid for seconds, so that a fixed permission takes
effect quickly. Concurrent requests with the same token share one review, so a
burst of requests costs one round trip to the API server.

The reviews are made with the gateway's own credentials. When the API server
refuses those (an exec plugin's or OIDC token that expired, a client certificate
past its end), they are loaded again at once, as the informer does, and the
review is made once more; at most once per ``reload_interval``, so that
credentials refused even when fresh do not run the plugin for every request.
"""

from __future__ import annotations

import asyncio
import dataclasses
import enum
import hashlib
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol

from kubernetes.aio import client as k8s

from gateway.domain.records import GROUP, PLURAL

__all__ = [
    "AllowAll",
    "Authorizer",
    "Decision",
    "KubernetesAuthorizer",
    "Refusal",
    "Verdict",
    "bearer_token",
    "refusal",
]

log = logging.getLogger(__name__)

RESOURCE, VERB = PLURAL, "list"


class Decision(enum.Enum):
    ALLOWED = "allowed"
    DENIED = "denied"  # a valid user without permission: 403
    INVALID = "invalid"  # no token, or one the cluster does not accept: 401
    ERROR = "error"  # the reviews could not be made: 503


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    decision: Decision
    user: str | None
    reason: str

    @property
    def allowed(self) -> bool:
        return self.decision is Decision.ALLOWED


@dataclasses.dataclass(frozen=True, slots=True)
class Refusal:
    """How an HTTP endpoint answers a verdict that does not let the caller in."""

    status: int
    message: str
    code: str
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


def refusal(verdict: Verdict) -> Refusal | None:
    """The answer to a refused caller (None when allowed): 401 with a challenge for no
    or a bad token, 403 for a user without permission, 503 when no review could be made.
    """
    if verdict.decision is Decision.INVALID:
        challenge = {"www-authenticate": 'Bearer realm="hypervisor-gateway"'}
        return Refusal(401, f"unauthenticated: {verdict.reason}", "UNAUTHENTICATED", challenge)
    if verdict.decision is Decision.DENIED:
        return Refusal(403, f"forbidden: {verdict.reason}", "FORBIDDEN")
    if verdict.decision is Decision.ERROR:
        return Refusal(503, verdict.reason, "UNAVAILABLE", {"retry-after": "5"})
    return None


class Authorizer(Protocol):
    async def check(self, token: str | None) -> Verdict: ...


class AllowAll:
    """``--auth none``: every caller is let in."""

    verdict = Verdict(Decision.ALLOWED, None, "authentication is off")

    async def check(self, token: str | None) -> Verdict:
        return self.verdict


def bearer_token(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer <token>`` header, or None."""
    if not header:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    return token if scheme.lower() == "bearer" and token else None


class KubernetesAuthorizer:
    """TokenReview + SubjectAccessReview against the API server, cached."""

    def __init__(
        self,
        api: k8s.ApiClient,
        *,
        allowed_ttl: float = 300.0,
        denied_ttl: float = 10.0,
        max_entries: int = 10_000,
        on_decision: Callable[[str], None] | None = None,
        credentials: Callable[[], Awaitable[None]] | None = None,
        reload_interval: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.authentication = k8s.AuthenticationV1Api(api)
        self.authorization = k8s.AuthorizationV1Api(api)
        self.allowed_ttl = allowed_ttl
        self.denied_ttl = denied_ttl
        self.max_entries = max_entries
        self.on_decision = on_decision
        self._clock = clock
        self._cache: OrderedDict[str, tuple[float, Verdict]] = OrderedDict()
        self._pending: dict[str, asyncio.Task[Verdict]] = {}
        #: Loads the gateway's credentials into the client again (token and certificate).
        self._credentials = credentials
        self.reload_interval = reload_interval
        self._reloaded_at = -reload_interval
        self._reloading = asyncio.Lock()

    async def check(self, token: str | None) -> Verdict:
        if token is None:
            return self._record(Verdict(Decision.INVALID, None, "no bearer token"))
        key = hashlib.sha256(token.encode()).hexdigest()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > self._clock():
            self._cache.move_to_end(key)
            return cached[1]
        review = self._pending.get(key)
        if review is None:
            # A task of its own, every request awaiting it shielded: one that goes away
            # (its client hung up) must not cancel the review for all the others.
            review = self._pending[key] = asyncio.create_task(self._decide(key, token))
            review.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(review)

    async def _decide(self, key: str, token: str) -> Verdict:
        """Review ``token`` (hashed to ``key``) and keep the verdict for its TTL."""
        verdict = self._record(await self._review(token))
        if verdict.decision is not Decision.ERROR:
            ttl = self.allowed_ttl if verdict.allowed else self.denied_ttl
            self._cache[key] = (self._clock() + ttl, verdict)
            while len(self._cache) > self.max_entries:
                self._cache.popitem(last=False)
        return verdict

    def _record(self, verdict: Verdict) -> Verdict:
        if self.on_decision is not None:
            self.on_decision(verdict.decision.value)
        return verdict

    async def _review(self, token: str) -> Verdict:
        try:
            try:
                return await self._ask(token)
            except k8s.ApiException as error:
                if error.status != 401 or not await self._reload_credentials():
                    raise
                return await self._ask(token)
        except k8s.ApiException as error:
            log.error("authentication review failed: HTTP %s %s", error.status, error.reason)
            return Verdict(Decision.ERROR, None, "cannot check credentials right now")
        except Exception as error:  # connection refused, timeouts
            log.error("authentication review failed: %s", type(error).__name__)
            return Verdict(Decision.ERROR, None, "cannot check credentials right now")

    async def _ask(self, token: str) -> Verdict:
        """The TokenReview, then the SubjectAccessReview of the user it names."""
        review = await self.authentication.create_token_review(
            k8s.V1TokenReview(
                api_version="authentication.k8s.io/v1",
                kind="TokenReview",
                spec=k8s.V1TokenReviewSpec(token=token),
            )
        )
        status = review.status
        if status is None or not status.authenticated or status.user is None:
            reason = (status.error if status is not None else None) or "token not accepted"
            return Verdict(Decision.INVALID, None, reason)
        user = status.user
        access = await self.authorization.create_subject_access_review(
            k8s.V1SubjectAccessReview(
                api_version="authorization.k8s.io/v1",
                kind="SubjectAccessReview",
                spec=k8s.V1SubjectAccessReviewSpec(
                    user=user.username,
                    uid=user.uid,
                    groups=user.groups,
                    extra=user.extra,
                    resource_attributes=k8s.V1ResourceAttributes(
                        group=GROUP, resource=RESOURCE, verb=VERB
                    ),
                ),
            )
        )
        if access.status is not None and access.status.allowed:
            return Verdict(Decision.ALLOWED, user.username, "allowed")
        reason = (access.status.reason if access.status else None) or "no RBAC rule allows it"
        return Verdict(
            Decision.DENIED,
            user.username,
            f"user {user.username!r} may not {VERB} {RESOURCE}.{GROUP}: {reason}",
        )

    async def _reload_credentials(self) -> bool:
        """Load the gateway's credentials again, unless that was done just now.

        Whether to ask again: also when another review has just reloaded them.
        """
        if self._credentials is None:
            return False
        async with self._reloading:
            if self._clock() - self._reloaded_at < self.reload_interval:
                return True
            self._reloaded_at = self._clock()
            log.warning("the API server refused the gateway's credentials; loading them again")
            try:
                await self._credentials()
            except Exception as error:
                log.error("cannot load the gateway's credentials again: %s", error)
                return False
        return True
