// Verifies admission JWTs as a Node booking API would: jose's createRemoteJWKSet fetches the
// keys from the JWKS route, and jwtVerify checks the signature, iss, aud, exp and nbf.
//
// Reads {jwksUri, issuer, audience, tokens: {name: jwt}} on stdin; writes
// {name: {ok: true, claims, kid} | {ok: false, error: "<error code>"}} on stdout.
import { createRemoteJWKSet, jwtVerify } from 'jose';

let input = '';
for await (const chunk of process.stdin) input += chunk;
const request = JSON.parse(input);
const results = {};
for (const [name, token] of Object.entries(request.tokens)) {
  // A fresh key set for each token: no cache hides what the route serves now.
  const jwks = createRemoteJWKSet(new URL(request.jwksUri), { cacheMaxAge: 0, cooldownDuration: 0 });
  try {
    const { payload, protectedHeader } = await jwtVerify(token, jwks, {
      issuer: request.issuer,
      audience: request.audience,
      algorithms: ['RS256', 'ES256', 'EdDSA'],
      requiredClaims: ['exp', 'iat', 'nbf', 'sub'],
    });
    results[name] = { ok: true, claims: payload, kid: protectedHeader.kid };
  } catch (err) {
    results[name] = { ok: false, error: err.code || err.name };
  }
}
process.stdout.write(JSON.stringify(results));
