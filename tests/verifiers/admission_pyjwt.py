"""Verifies admission JWTs as a Python booking API would: PyJWT's PyJWKClient fetches the
keys from the JWKS route, and jwt.decode checks the signature, iss, aud, exp and nbf.

Reads {"jwksUri", "issuer", "audience", "tokens": {name: jwt}} on stdin; writes
{name: {"ok": true, "claims": {...}} | {"ok": false, "error": "<exception class>"}} on stdout.
"""

import json
import sys

import jwt

request = json.load(sys.stdin)
client = jwt.PyJWKClient(request["jwksUri"], cache_keys=False, cache_jwk_set=False)
results = {}
for name, token in request["tokens"].items():
    try:
        key = client.get_signing_key_from_jwt(token)
        claims = jwt.decode(
            token,
            key.key,
            algorithms=["RS256", "ES256", "EdDSA"],
            audience=request["audience"],
            issuer=request["issuer"],
            options={"require": ["exp", "iat", "nbf", "iss", "aud", "sub"]},
        )
        results[name] = {"ok": True, "claims": claims, "kid": key.key_id}
    except Exception as err:  # the class name is the verdict
        results[name] = {"ok": False, "error": type(err).__name__}
json.dump(results, sys.stdout)
