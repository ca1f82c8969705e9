"""A SigV4-verifying proxy, as API Gateway checks an `AWS_IAM` route, in front of a local stack.

It listens on a free loopback port and prints that port as the first line of stdout. Each
request's signature is computed again with botocore (`SigV4Auth`, service `execute-api`,
`--region`) over what arrived: the method, the path and query exactly as received, the
headers the Authorization header lists in SignedHeaders, the body, and the X-Amz-Date the
request carried. A request that does not verify is answered 403 with an
`application/problem+json` body saying why:

- no Authorization header, or one that does not parse (or no X-Amz-Date);
- an access key not given with `--key KEY:SECRET`;
- an X-Amz-Date more than 5 minutes from the proxy's clock (`--clock-offset SECONDS` moves
  that clock, to stand for a skewed machine);
- no signed X-Amz-Security-Token, with `--require-session-token` (its value is not checked);
- a signature that differs from the one computed.

Any other request goes to `--upstream` (method, path and query, headers, body), and its
answer (status, headers, body) comes back as it is.

    python3 sigv4_proxy.py --upstream http://127.0.0.1:3000 --key AKID:SECRET [--region us-east-1]
"""

import argparse
import calendar
import hmac
import http.client
import json
import sys
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

SERVICE = "execute-api"
MOST_SKEW_SECONDS = 300
# Headers that belong to one connection, not to the request or answer passed on.
HOP_BY_HOP = {
    "connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
    "trailer", "transfer-encoding", "upgrade", "content-length",
}


class Refused(Exception):
    """Why a request does not verify: a problem's title and detail."""

    def __init__(self, title, detail, **extra):
        super().__init__(title)
        self.problem = {"type": "about:blank", "title": title, "status": 403, "detail": detail,
                        **extra}


def parse_authorization(value):
    """`AWS4-HMAC-SHA256 Credential=K/D/R/S/aws4_request, SignedHeaders=a;b, Signature=hex`."""
    scheme, _, rest = value.partition(" ")
    if scheme != "AWS4-HMAC-SHA256":
        raise Refused("Malformed Authorization", f"the scheme is {scheme!r}, not AWS4-HMAC-SHA256")
    fields = {}
    for part in rest.split(","):
        name, sep, field = part.strip().partition("=")
        if not sep:
            raise Refused("Malformed Authorization", f"{part.strip()!r} is not NAME=VALUE")
        fields[name] = field
    missing = [n for n in ("Credential", "SignedHeaders", "Signature") if not fields.get(n)]
    if missing:
        raise Refused("Malformed Authorization", f"no {', '.join(missing)}")
    scope = fields["Credential"].split("/")
    if len(scope) != 5 or scope[4] != "aws4_request":
        raise Refused("Malformed Authorization", f"the credential {fields['Credential']!r} is "
                      "not KEY/DATE/REGION/SERVICE/aws4_request")
    return scope, fields["SignedHeaders"].split(";"), fields["Signature"]


def verify(settings, method, target, headers, body):
    """Raises Refused unless the request carries a good signature of known credentials."""
    authorization = headers.get("Authorization")
    if not authorization:
        raise Refused("Missing Authorization", "the request is not signed: no Authorization header")
    (key, day, region, service, _), signed, signature = parse_authorization(authorization)
    amz_date = headers.get("X-Amz-Date", "")
    try:
        signed_at = calendar.timegm(time.strptime(amz_date, "%Y%m%dT%H%M%SZ"))
    except ValueError:
        raise Refused("Malformed Authorization", f"X-Amz-Date {amz_date!r} is not YYYYMMDDTHHMMSSZ")
    if key not in settings.keys:
        raise Refused("Unknown access key", f"the access key {key} is not known here")
    skew = signed_at - (time.time() + settings.clock_offset)
    if abs(skew) > MOST_SKEW_SECONDS:
        raise Refused("Signature expired", f"X-Amz-Date {amz_date} is {abs(skew):.0f} s "
                      f"{'ahead of' if skew > 0 else 'behind'} the server's clock; at most "
                      f"{MOST_SKEW_SECONDS} s is allowed")
    token = headers.get("X-Amz-Security-Token")
    if settings.require_session_token and not (token and "x-amz-security-token" in signed):
        raise Refused("Missing session token", "these credentials need a signed "
                      "X-Amz-Security-Token")
    if (day, region, service) != (amz_date[:8], settings.region, SERVICE):
        raise Refused("Credential scope mismatch", f"the scope {day}/{region}/{service} is not "
                      f"{amz_date[:8]}/{settings.region}/{SERVICE}")
    absent = [name for name in signed if name not in headers]
    if "host" not in signed or absent:
        raise Refused("Malformed Authorization", "SignedHeaders must list host, and only "
                      f"headers the request carries (absent: {', '.join(absent) or 'none'})")

    # The request as botocore sees it: only the signed headers, the path and query as sent.
    request = AWSRequest(
        method=method,
        url=f"http://{headers['Host']}{target}",
        headers={name: ",".join(headers.get_all(name)) for name in signed},
        data=body,
    )
    request.context["timestamp"] = amz_date
    signer = SigV4Auth(Credentials(key, settings.keys[key], token), SERVICE, settings.region)
    canonical = signer.canonical_request(request)
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    if not hmac.compare_digest(expected, signature):
        raise Refused("Signature mismatch", "the request signature we calculated does not match "
                      "the signature you provided", canonicalRequest=canonical)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def handle_one(self):
        body = self.read_body()
        try:
            verify(self.server.settings, self.command, self.path, self.headers, body)
        except Refused as refused:
            payload = json.dumps(refused.problem).encode()
            return self.answer(403, [("Content-Type", "application/problem+json")], payload)
        upstream = self.server.settings.upstream
        connection = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=30)
        try:
            headers = {n: v for n, v in self.headers.items() if n.lower() not in HOP_BY_HOP}
            headers["Host"] = upstream.netloc
            connection.request(self.command, upstream.path.rstrip("/") + self.path,
                               body=body if body or self.command in ("POST", "PUT", "PATCH")
                               else None, headers=headers)
            reply = connection.getresponse()
            answer = reply.read()
            kept = [(n, v) for n, v in reply.getheaders() if n.lower() not in HOP_BY_HOP]
            self.answer(reply.status, kept, answer)
        except OSError as err:
            problem = {"title": "Bad Gateway", "status": 502, "detail": f"the upstream: {err}"}
            self.answer(502, [("Content-Type", "application/problem+json")],
                        json.dumps(problem).encode())
        finally:
            connection.close()

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                chunk = self.rfile.read(size + 2)[:size]
                if size == 0:
                    while self.rfile.readline().strip():
                        pass
                    return b"".join(chunks)
                chunks.append(chunk)
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def answer(self, status, headers, body):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_PUT = do_POST = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_one

    def log_message(self, format, *args):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the URL requests go on to")
    parser.add_argument("--key", action="append", required=True, metavar="KEY:SECRET",
                        help="credentials the proxy knows (repeat for more)")
    parser.add_argument("--region", default="us-east-1")
    parser.add_argument("--clock-offset", type=float, default=0.0, metavar="SECONDS",
                        help="seconds added to the proxy's clock")
    parser.add_argument("--require-session-token", action="store_true")
    parser.add_argument("--port", type=int, default=0)
    settings = parser.parse_args()
    settings.keys = dict(pair.split(":", 1) for pair in settings.key)
    settings.upstream = urllib.parse.urlsplit(settings.upstream)

    server = ThreadingHTTPServer(("127.0.0.1", settings.port), Handler)
    server.daemon_threads = True
    server.settings = settings
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
