"""REST over mutual TLS with `requests`, and every failure turned into a CliError with an exit code.

requests is used rather than httpx: httpx silently drops a client certificate given as a path
together with `verify=<CA path>` (httpx 0.28.1; encode/httpx pull request #3718 is still open).
"""

from __future__ import annotations

import datetime as dt
import ssl
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import requests

from cli.config import Config
from cli.errors import OPERATION_FAILED, REFUSED, UNREACHABLE, USAGE, CliError

# The longest wait for a connection, TLS handshake included (urllib3 counts the handshake as connecting).
CONNECT_TIMEOUT = 10.0


class Client:
    """A keep-alive HTTPS session to the API presenting the configured client certificate."""

    def __init__(self, config: Config) -> None:
        # Imported here, not at the top: requests costs ~0.3 s of start-up that --help and usage errors skip.
        import requests

        self.config = config
        self.session = requests.Session()
        # Otherwise REQUESTS_CA_BUNDLE and proxy variables from the environment override our CA file.
        self.session.trust_env = False
        self.session.verify = str(config.ca)
        self.session.cert = (str(config.cert), str(config.key))
        self.session.headers["Accept"] = "application/json"
        self.session.headers["User-Agent"] = "flexzone-cli"

    def url(self, path: str) -> str:
        """An API path (or an absolute URL the API gave us) on the configured server."""
        parts = urlsplit(path)
        if parts.scheme:
            # An absolute URL the server built (a next page, an operation's Location): its path already
            # carries any prefix the service is mounted under. Only the scheme and host are ours, since
            # the server builds them from its own view of the host.
            server = urlsplit(self.config.server)
            return f"{server.scheme}://{server.netloc}{parts.path}" + (f"?{parts.query}" if parts.query else "")
        return self.config.server + (path if path.startswith("/") else f"/{path}")

    def request(self, method: str, path: str, *, params: dict | None = None, body: dict | None = None,
                timeout: float | None = None) -> requests.Response:
        import requests

        connect, started = min(CONNECT_TIMEOUT, self.config.timeout), time.monotonic()
        try:
            response = self.session.request(method, self.url(path), params=params, json=body,
                                            timeout=(connect, timeout or self.config.timeout))
        except requests.exceptions.SSLError as exc:
            raise tls_error(exc, self.config) from None
        except requests.exceptions.ConnectionError as exc:
            if _ssl_cause(exc) is not None:
                raise tls_error(exc, self.config) from None
            if _closed_after_connecting(exc):
                # A server that refuses the client certificate may close the socket before its alert
                # arrives (TLS 1.3 checks it after the client's Finished); so may one that restarts, or
                # a proxy. One fresh handshake tells them apart.
                refusal = _refusal_on_a_fresh_handshake(self.config)
                if refusal is not None:
                    raise tls_error(refusal, self.config) from None
                raise CliError(f"{self.config.server} closed the connection before answering ({_reason(str(exc))})",
                               "the service may have restarted, or something between cut the connection; "
                               "try again", UNREACHABLE) from None
            raise unreachable(exc, self.config) from None
        except requests.exceptions.ChunkedEncodingError as exc:
            raise CliError(f"the reply from {self.config.server} was cut off or malformed ({_reason(str(exc))[:200]})",
                           "try again; if it persists, check what sits between you and the service",
                           UNREACHABLE) from None
        except (requests.exceptions.InvalidURL, requests.exceptions.URLRequired, requests.exceptions.MissingSchema,
                requests.exceptions.InvalidSchema) as exc:
            raise CliError(f"cannot use the server URL {self.config.server!r}: {exc}",
                           f"check server in {self.config.source}", USAGE) from None
        except requests.exceptions.Timeout:
            # The time waited, not the configured limit: urllib3 reports a TLS handshake that outlasts the
            # connect limit as a read timeout.
            raise CliError(f"{self.config.server} did not answer within {time.monotonic() - started:.1f} s",
                           "the service may be starting or overloaded; try again, or raise timeout in the "
                           f"configuration for a slow answer (a TLS handshake is waited for {connect:g} s at most)",
                           UNREACHABLE) from None
        except OSError as exc:  # e.g. the key does not match the certificate, raised while loading them
            raise CliError(f"cannot use the client certificate {self.config.cert}: {exc}",
                           f"check that {self.config.key} is the key of {self.config.cert}", REFUSED) from None
        if response.status_code >= 400:
            raise http_error(response)
        return response

    def get(self, path: str, **params: Any) -> Any:
        return json_body(self.request("GET", path, params={k: v for k, v in params.items() if v is not None}))

    def post(self, path: str, body: dict, *, params: dict | None = None) -> requests.Response:
        return self.request("POST", path, params=params, body=body)

    def get_all(self, path: str, **params: Any) -> list[dict]:
        """Every item of a (possibly paginated) listing."""
        page = self.get(path, **params)
        if isinstance(page, list):
            return page
        items = list(page.get("results", []))
        while page.get("next"):
            page = json_body(self.request("GET", page["next"]))
            items.extend(page.get("results", []))
        return items


def json_body(response: requests.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        raise CliError(f"{response.url} answered {response.status_code} with something that is not JSON",
                       "check that server in the configuration is the flexzone API", OPERATION_FAILED) from None


def _ssl_cause(exc: BaseException) -> ssl.SSLError | None:
    seen: set[int] = set()
    stack: list[BaseException] = [exc]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ssl.SSLError):
            return current
        stack.extend(arg for arg in getattr(current, "args", ()) if isinstance(arg, BaseException))
        for linked in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(linked, BaseException):
                stack.append(linked)
    # urllib3 sometimes keeps only the text of the SSL error.
    return ssl.SSLError(str(exc)) if "SSL" in str(exc) or "alert" in str(exc).lower() else None


def _refusal_on_a_fresh_handshake(config: Config) -> ssl.SSLError | None:
    """The TLS alert a new connection with the same certificate meets, if the server refuses it; None if
    the server takes it (or cannot be told apart from one that just went away)."""
    import socket

    parts = urlsplit(config.server)
    context = ssl.create_default_context(cafile=str(config.ca))
    try:
        context.load_cert_chain(str(config.cert), str(config.key))
        with socket.create_connection((parts.hostname, parts.port or 443), timeout=min(10.0, config.timeout)) as raw:
            with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                tls.sendall(b"GET " + (parts.path or "").encode() + b"/api/health/ HTTP/1.1\r\nHost: "
                            + parts.netloc.encode()
                            + b"\r\nConnection: close\r\n\r\n")
                tls.recv(1)
    except ssl.SSLError as exc:
        return exc if "alert" in str(exc).lower() or "certificate" in str(exc).lower() else None
    except (OSError, ValueError):
        return None
    return None


def _closed_after_connecting(exc: BaseException) -> bool:
    text = str(exc)
    return any(marker in text for marker in ("Connection aborted", "Connection reset", "RemoteDisconnected"))


def certificate_dates(path: Path) -> tuple[dt.datetime, dt.datetime] | None:
    """notBefore and notAfter of the first certificate in a PEM file, or None if it cannot be read."""
    from cryptography import x509  # only on the error path: it costs ~70 ms of start-up

    try:
        cert = x509.load_pem_x509_certificate(path.read_bytes())
    except (OSError, ValueError):
        return None
    return cert.not_valid_before_utc, cert.not_valid_after_utc


def tls_error(exc: BaseException, config: Config) -> CliError:
    """Explain a refused handshake: our own certificate first (checked locally), then the alert text."""
    text = str(_ssl_cause(exc) or exc)
    lowered = text.lower()
    now = dt.datetime.now(dt.UTC)
    dates = certificate_dates(config.cert)
    if dates is None:
        return CliError(f"cannot read the client certificate {config.cert} as PEM",
                        "check cert in the configuration", REFUSED)
    not_before, not_after = dates
    if not_after < now:
        return CliError(f"your client certificate expired on {not_after:%Y-%m-%d %H:%M} UTC ({config.cert})",
                        "ask a flexzone admin to issue a new one (manage.py ca issue)", REFUSED)
    if not_before > now:
        return CliError(f"your client certificate is not valid before {not_before:%Y-%m-%d %H:%M} UTC "
                        f"({config.cert})", "check this machine's clock", REFUSED)
    if "wrong version number" in lowered or "record layer failure" in lowered or "http request" in lowered:
        return CliError(f"{config.server} does not speak TLS (is it the flexzone API's port?)",
                        f"check server in {config.source}", UNREACHABLE)
    if "key values mismatch" in lowered:
        return CliError(f"the key {config.key} does not belong to the certificate {config.cert}",
                        "check cert and key in the configuration", REFUSED)
    if "certificate verify failed" in lowered:
        return CliError(f"the server's certificate is not trusted by {config.ca} ({_reason(text)})",
                        "check ca in the configuration: it must be the flexzone CA", REFUSED)
    if "revoked" in lowered:
        return CliError(f"the server refused the client certificate {config.cert}: it has been revoked",
                        "ask a flexzone admin for a new certificate", REFUSED)
    if "unknown ca" in lowered or "bad certificate" in lowered or "certificate unknown" in lowered:
        return CliError(f"the server does not trust the client certificate {config.cert} (not issued by its CA)",
                        "use the certificate a flexzone admin issued you", REFUSED)
    if "certificate required" in lowered:
        return CliError("the server requires a client certificate and none was accepted",
                        "check cert and key in the configuration", REFUSED)
    if "expired" in lowered:
        return CliError(f"the server says a certificate has expired ({_reason(text)})",
                        f"check {config.cert} and the server's certificate dates", REFUSED)
    return CliError(f"TLS with {config.server} failed: {_reason(text)}",
                    "check ca, cert and key in the configuration", REFUSED)


def _reason(text: str) -> str:
    """The short OpenSSL reason out of urllib3's long nested message."""
    for marker in ("] ", "SSLError("):
        if marker in text:
            text = text.rsplit(marker, 1)[-1]
    return text.strip(" ')\"(").split(" (_ssl.c")[0]


def unreachable(exc: BaseException, config: Config) -> CliError:
    text = str(exc)
    if "Connection refused" in text or "Errno 111" in text:
        why = "connection refused"
    elif "Name or service not known" in text or "nodename nor servname" in text or "NameResolution" in text:
        why = "unknown host name"
    elif "timed out" in text.lower():
        why = "connection timed out"
    else:
        why = _reason(text)[:200]
    return CliError(f"cannot reach {config.server}: {why}",
                    f"is the flexzone service running? check server in {config.source}", UNREACHABLE)


# API fields given by a flag of another name; the others are --<field with dashes>.
FLAGS = {"hosts": "--host", "duration": "--for"}


def flag_for(field: str) -> str:
    """The flag that gave an API field: `hosts[1]` (the second --host) -> `--host`."""
    name = field.split("[", 1)[0]
    return FLAGS.get(name, f"--{name.replace('_', '-')}")


def http_error(response: requests.Response) -> CliError:
    """The API's JSON error ({detail, code, errors: [{field, rule, message, suggestions?}]}) as a CliError
    carrying the HTTP status."""
    error = _http_error(response)
    error.status = response.status_code
    return error


def _http_error(response: requests.Response) -> CliError:
    try:
        body = response.json()
    except ValueError:
        body = {}
    if not isinstance(body, dict):
        body = {}
    detail = str(body.get("detail") or response.reason or "error")
    errors = body.get("errors") if isinstance(body.get("errors"), list) else []
    status = response.status_code
    message, hint = detail, ""
    if errors:
        first = errors[0] if isinstance(errors[0], dict) else {}
        field = first.get("field")
        message = f"{field}: {first.get('message', detail)}" if field else first.get("message", detail)
        if len(errors) > 1:
            message += "; " + "; ".join(f"{e.get('field')}: {e.get('message')}" for e in errors[1:3]
                                        if isinstance(e, dict))
        suggestions = first.get("suggestions") or []
        if suggestions:
            names = [str(name) for name in suggestions[:5]]
            choices = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
            hint = f"did you mean {choices}?"
        elif field:
            hint = f"check {flag_for(str(field))}"
    if "Did you mean" in message and hint:
        message = message.split(" Did you mean")[0]
    if status in (401, 403):
        return CliError(f"refused ({status}): {detail}",
                        hint or ("ask a flexzone admin to register your certificate" if status == 401
                                 else "your principal's role or scope does not allow this"), REFUSED)
    if status == 400:
        return CliError(message, hint or "check the arguments", USAGE)
    if status == 404:
        return CliError(f"not found: {detail}", hint or "check the name or number", USAGE)
    if status == 409:
        return CliError(f"conflict: {message}", hint or "see flexzone --lsifcp and flexzone --journal",
                        OPERATION_FAILED)
    return CliError(f"the server answered {status}: {detail}", "see the service's log", OPERATION_FAILED)
