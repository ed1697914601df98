"""Test identities: API keys with their `AGENT_API_KEYS` entries, and an identity
provider of our own (an RSA key, its JWKS, the tokens it signs)."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ISSUER = "https://idp.test"
AUDIENCE = "memory-agent"
KEYS = {"alice": "alice-key-0123456789abcdef", "bob": "bob-key-0123456789abcdef"}
"""Each user's API key (what a client sends)."""


def key_entries(keys: dict[str, str] = KEYS) -> str:
    """`AGENT_API_KEYS` for `keys`: `user:sha256hex,…`."""
    return ",".join(
        f"{user}:{hashlib.sha256(key.encode()).hexdigest()}" for user, key in keys.items()
    )


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class Provider:
    """An OIDC identity provider's signing side: its key, its JWKS, its tokens."""

    kid: str = "test-key"
    key: rsa.RSAPrivateKey = field(default_factory=new_rsa_key)

    def jwks(self) -> dict[str, Any]:
        public = json.loads(RSAAlgorithm.to_jwk(self.key.public_key()))
        return {"keys": [{**public, "kid": self.kid, "alg": "RS256", "use": "sig"}]}

    def write_jwks(self, path: Path) -> Path:
        path.write_text(json.dumps(self.jwks()))
        return path

    def token(self, sub: str, *, signer: rsa.RSAPrivateKey | None = None, **claims: Any) -> str:
        """A token for `sub`, valid for ten minutes unless `claims` say otherwise (a claim
        given as None is left out)."""
        now = int(time.time())
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600}
        payload.update(claims)
        payload = {name: value for name, value in payload.items() if value is not None}
        return jwt.encode(payload, signer or self.key, algorithm="RS256", headers={"kid": self.kid})

    def refused_tokens(self) -> dict[str, str]:
        """Tokens that must each be refused, by what is wrong with them."""
        now = int(time.time())
        return {
            "expired": self.token("carol", exp=now - 3600, iat=now - 7200),
            "not yet valid": self.token("carol", nbf=now + 3600),
            "wrong audience": self.token("carol", aud="another-app"),
            "wrong issuer": self.token("carol", iss="https://evil.test"),
            "wrong signature": self.token("carol", signer=new_rsa_key()),
            "shared secret": jwt.encode(
                {"iss": ISSUER, "aud": AUDIENCE, "sub": "carol", "exp": now + 600},
                "a-shared-secret-of-at-least-32-bytes!",
                algorithm="HS256",
                headers={"kid": self.kid},
            ),
            "no expiry": self.token("carol", exp=None),
        }
