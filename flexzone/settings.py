"""flexzone settings, read only from environment variables.

Every variable is parsed by a small helper that fails fast with the variable's name and the rule it
broke, so a typo stops the process at start-up instead of surfacing later as odd behaviour.
SQLite is the embedded default; DATABASE_URL selects PostgreSQL.
"""

import os
import re
import secrets
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name, default)
    if value is None:
        raise ImproperlyConfigured(f"{name}: required environment variable is not set")
    return value


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    if raw.strip().lower() in _TRUE:
        return True
    if raw.strip().lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}: must be one of {sorted(_TRUE | _FALSE - {''})}, got {raw!r}")


def env_float(name: str, default: float, *, minimum: float = 0.0) -> float:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: must be a number, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}: must be >= {minimum}, got {value}")
    return value


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: must be an integer, got {raw!r}") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name}: must be >= {minimum}, got {value}")
    return value


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = os.environ.get(name, default)
    if value not in choices:
        raise ImproperlyConfigured(f"{name}: must be one of {', '.join(choices)}, got {value!r}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_path(name: str, default: Path) -> Path:
    return Path(os.environ.get(name, str(default))).expanduser()


DEBUG = env_bool("FLEXZONE_DEBUG", False)
# A per-process random key is acceptable when nothing signed must outlive the process (tests, a
# throw-away demo); a deployment sets FLEXZONE_SECRET_KEY.
SECRET_KEY = os.environ.get("FLEXZONE_SECRET_KEY") or secrets.token_urlsafe(50)
ALLOWED_HOSTS = env_list("FLEXZONE_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1]")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI and ReDoc from the installed package, never a CDN
    "registry",
    "access.apps.AccessConfig",
    "operations.apps.OperationsConfig",
    "api",
    "console",
    "serving",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Static files (the API docs' and the admin's scripts and styles) are served by the service
    # itself, from the installed packages: no page loads anything from another host.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "api.errors.JsonNotFoundUnderApi",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # The admin: client certificate of an admin principal, over the API's TLS; no password sign-in.
    "access.admin_access.AdminByCertificateMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "flexzone.urls"
WSGI_APPLICATION = "flexzone.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # Overrides of installed packages' pages (found before the packages' own templates).
        "DIRS": [BASE_DIR / "api" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

_database_url = os.environ.get("DATABASE_URL", "")
if _database_url:
    try:
        # A kept connection is checked before its first use in each request or unit of work (Django's
        # CONN_HEALTH_CHECKS): one the server dropped (a restart, a failover) is replaced, not failed on.
        _db = dj_database_url.parse(_database_url, conn_max_age=env_int("FLEXZONE_DB_CONN_MAX_AGE", 60),
                                    conn_health_checks=True)
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL: not a database URL this project supports ({exc})") from None
    if _db["ENGINE"] not in ("django.db.backends.postgresql", "django.db.backends.sqlite3"):
        raise ImproperlyConfigured(f"DATABASE_URL: must be postgresql:// or sqlite://, got engine {_db['ENGINE']}")
else:
    _db = {
        "ENGINE": "django.db.backends.sqlite3",
        # A string, so that ":memory:" is seen below (and by Django) as the in-memory database.
        "NAME": str(env_path("FLEXZONE_SQLITE_PATH", BASE_DIR / ".demo" / "flexzone.sqlite3")),
    }
if _db["ENGINE"] == "django.db.backends.sqlite3":
    # A fresh clone has no .demo/ yet: the file's folder is made here, so that `manage.py migrate` can
    # create the file and a command run before it is told to migrate rather than "unable to open".
    if _db["NAME"] != ":memory:":
        try:
            Path(_db["NAME"]).parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ImproperlyConfigured(
                f"FLEXZONE_SQLITE_PATH: cannot make the folder of {_db['NAME']} ({exc})"
            ) from None
    # Writers queue for the lock at BEGIN instead of failing mid-transaction with "database is
    # locked" (the SQLite demo runs operations in threads beside the web server).
    _db.setdefault("OPTIONS", {}).update({"transaction_mode": "IMMEDIATE", "timeout": 20})
elif not env_bool("FLEXZONE_DB_JIT", False):
    # Every statement flexzone sends is short, and several read small tables whose rows the planner does
    # not know (the generations, the change rows that come and go): a misestimate past jit_above_cost had
    # PostgreSQL compile a 1 ms statement for 100 ms and more. libpq's `options` sets it per connection;
    # given, it replaces PGOPTIONS, so it starts from DATABASE_URL's options or else PGOPTIONS, and a jit
    # setting either already makes is left as it is.
    _options = _db.setdefault("OPTIONS", {})
    _given = _options.get("options", os.environ.get("PGOPTIONS", ""))
    _options["options"] = _given if re.search(r"\bjit\s*=", _given) else f"{_given} -c jit=off".strip()
DATABASES = {"default": _db}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = env_path("FLEXZONE_STATIC_ROOT", BASE_DIR / ".demo" / "static")
WHITENOISE_USE_FINDERS = True
# Every page is served over TLS (the API's server): cookies never travel in the clear.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = True  # straight from the apps' static directories, no collectstatic step

# Router secrets are referenced, never stored in the registry: "env:NAME" reads an environment
# variable, "file:NAME" reads FLEXZONE_SECRETS_DIR/NAME.
FLEXZONE_SECRETS_DIR = env_path("FLEXZONE_SECRETS_DIR", BASE_DIR / ".demo" / "secrets")

REST_FRAMEWORK: dict[str, Any] = {
    "DEFAULT_SCHEMA_CLASS": "api.schema.AutoSchema",
}
SPECTACULAR_SETTINGS: dict[str, Any] = {
    "TITLE": "flexzone API",
    "DESCRIPTION": "SAN extension management: registry, plans, connect/disconnect operations.",
    "VERSION": "1",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "POSTPROCESSING_HOOKS": ["drf_spectacular.hooks.postprocess_schema_enums", "api.schema.document_errors"],
    # What a client sends (FooRequest) apart from what it reads (Foo): required, blank and write-only
    # rules apply to the request only.
    "COMPONENT_SPLIT_REQUEST": True,
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("FLEXZONE_LOG_LEVEL", "INFO")},
    # procrastinate announces every task registration at INFO on each start-up; the SSH/telnet
    # libraries log every connection of the simulators at INFO.
    "loggers": {
        "procrastinate": {"level": env_str("FLEXZONE_QUEUE_LOG_LEVEL", "WARNING")},
        **{name: {"level": "WARNING"} for name in ("asyncssh", "paramiko", "telnetlib3", "netmiko")},
    },
}

# --- REST API over mutual TLS (api/) -------------------------------------------------------------
# The PKI directory holds ca.pem, crl.pem, server.pem/server.key; each file can be pointed elsewhere.
FLEXZONE_PKI_DIR = env_path("FLEXZONE_PKI_DIR", BASE_DIR / ".demo" / "pki")
FLEXZONE_TLS_CA = env_path("FLEXZONE_TLS_CA", FLEXZONE_PKI_DIR / "ca.pem")
FLEXZONE_TLS_CRL = env_path("FLEXZONE_TLS_CRL", FLEXZONE_PKI_DIR / "crl.pem")
FLEXZONE_TLS_CERT = env_path("FLEXZONE_TLS_CERT", FLEXZONE_PKI_DIR / "server.pem")
FLEXZONE_TLS_KEY = env_path("FLEXZONE_TLS_KEY", FLEXZONE_PKI_DIR / "server.key")
# Only for the nginx topology: trust X-Client-Verify/X-Client-Cert when the request came over the
# unix socket (REMOTE_ADDR is empty) and, if set, carries the shared secret.
FLEXZONE_TRUST_PROXY_HEADERS = env_bool("FLEXZONE_TRUST_PROXY_HEADERS", False)
FLEXZONE_PROXY_SECRET = env_str("FLEXZONE_PROXY_SECRET", "")
if FLEXZONE_TRUST_PROXY_HEADERS and len(FLEXZONE_PROXY_SECRET) < 16:
    # Without it, anything that can write to the socket is any principal: it need only send that
    # principal's (public) certificate in a header.
    raise ImproperlyConfigured(
        "FLEXZONE_PROXY_SECRET: required (at least 16 characters) when FLEXZONE_TRUST_PROXY_HEADERS is on; the "
        "proxy sends it as X-Flexzone-Proxy-Secret, so that only the proxy is believed about client certificates"
    )
FLEXZONE_API_MAX_WAIT = env_float("FLEXZONE_API_MAX_WAIT", 60.0)
# The link and operation lists answered in one SQL statement in front of Django (api/fast_lists.py).
FLEXZONE_API_FAST_LISTS = env_bool("FLEXZONE_API_FAST_LISTS", True)
REST_FRAMEWORK.update(
    {
        "DEFAULT_AUTHENTICATION_CLASSES": ["access.authentication.ClientCertificateAuthentication"],
        "DEFAULT_PERMISSION_CLASSES": ["access.permissions.SameOriginWrites", "access.permissions.RolePermission"],
        # Writes take JSON only (415 otherwise): a cross-site HTML form cannot send one.
        "DEFAULT_PARSER_CLASSES": ["api.parsers.BoundedJSONParser"],
        "UNAUTHENTICATED_USER": None,
        "EXCEPTION_HANDLER": "api.errors.exception_handler",
        "DEFAULT_PAGINATION_CLASS": "api.pagination.Pagination",
        "PAGE_SIZE": env_int("FLEXZONE_API_PAGE_SIZE", 100, minimum=1),
    }
)
# Mutual TLS is not expressible in OpenAPI 3.0 security schemes; the description says it instead.
SPECTACULAR_SETTINGS.update(
    {
        "AUTHENTICATION_WHITELIST": [],
        # Some read-only fields are shown to some roles only (an operation's transcript: admins).
        "COMPONENT_NO_READ_ONLY_REQUIRED": True,
        "DESCRIPTION": SPECTACULAR_SETTINGS["DESCRIPTION"]
        + " Every call needs mutual TLS: a client certificate issued by the flexzone CA and registered to a"
        " principal (viewer, operator or admin). Errors are JSON: detail, code, errors[{field, rule, message}].",
    }
)

# --- operations engine (operations/) ----------------------------------------------------
# Queue: "procrastinate" (PostgreSQL job queue; workers run `manage.py worker` on any machine),
# "thread" (in-process, for the SQLite demo) or "manual" (nothing runs until execute() is called).
FLEXZONE_OPS_QUEUE = env_choice(
    "FLEXZONE_OPS_QUEUE",
    "procrastinate" if "postgres" in _db["ENGINE"] else "thread",
    ("procrastinate", "thread", "manual"),
)
if FLEXZONE_OPS_QUEUE == "procrastinate" and "postgres" not in _db["ENGINE"]:
    raise ImproperlyConfigured("FLEXZONE_OPS_QUEUE: procrastinate needs DATABASE_URL=postgres://...")
if "postgres" in _db["ENGINE"]:
    INSTALLED_APPS.append("procrastinate.contrib.django")
    PROCRASTINATE_IMPORT_PATHS = ["operations.tasks"]
    PROCRASTINATE_AUTODISCOVER_MODULE_NAME = ""
FLEXZONE_OPS_POOL = env_bool("FLEXZONE_OPS_POOL", True)  # keep router sessions logged in between operations
FLEXZONE_OPS_POOL_IDLE = env_float("FLEXZONE_OPS_POOL_IDLE", 300.0)  # close a session idle this long (s)
FLEXZONE_OPS_KEEPALIVE = env_float("FLEXZONE_OPS_KEEPALIVE", 30.0, minimum=0.1)  # probe idle sessions (s)
FLEXZONE_OPS_SAVE_CONFIG = env_choice("FLEXZONE_OPS_SAVE_CONFIG", "idle", ("each", "idle", "never"))
FLEXZONE_OPS_SAVE_AFTER = env_float("FLEXZONE_OPS_SAVE_AFTER", 2.0)  # idle seconds before a batched save
FLEXZONE_OPS_TOTAL_TIMEOUT = env_float("FLEXZONE_OPS_TOTAL_TIMEOUT", 180.0, minimum=0.1)  # one operation, all steps
FLEXZONE_OPS_MAX_ATTEMPTS = env_int("FLEXZONE_OPS_MAX_ATTEMPTS", 5, minimum=1)  # per router step
FLEXZONE_OPS_BACKOFF = env_float("FLEXZONE_OPS_BACKOFF", 0.5)  # first retry delay (s), doubled each time
FLEXZONE_OPS_BACKOFF_MAX = env_float("FLEXZONE_OPS_BACKOFF_MAX", 8.0)
FLEXZONE_OPS_ROUTER_WAIT = env_float("FLEXZONE_OPS_ROUTER_WAIT", 120.0)  # wait for another op on the router (s)
FLEXZONE_OPS_HEARTBEAT = env_float("FLEXZONE_OPS_HEARTBEAT", 2.0, minimum=0.05)
FLEXZONE_OPS_STALE_AFTER = env_float("FLEXZONE_OPS_STALE_AFTER", 15.0, minimum=0.1)  # then a worker is presumed dead
if FLEXZONE_OPS_HEARTBEAT > FLEXZONE_OPS_STALE_AFTER / 2:
    # A live worker whose heartbeat is late once must not be taken for dead and have its operation
    # run a second time beside it.
    raise ImproperlyConfigured(
        f"FLEXZONE_OPS_HEARTBEAT ({FLEXZONE_OPS_HEARTBEAT:g} s) must be at most half of FLEXZONE_OPS_STALE_AFTER "
        f"({FLEXZONE_OPS_STALE_AFTER:g} s)"
    )
FLEXZONE_OPS_REAP_EVERY = env_int("FLEXZONE_OPS_REAP_EVERY", 5, minimum=1)  # seconds between stalled-op sweeps
FLEXZONE_OPS_LEASE_EVERY = env_int("FLEXZONE_OPS_LEASE_EVERY", 10, minimum=1)  # seconds between lease sweeps
# seconds between settles of link records failed operations left stuck (a router that did not answer)
FLEXZONE_OPS_SETTLE_EVERY = env_int("FLEXZONE_OPS_SETTLE_EVERY", 30, minimum=1)
FLEXZONE_OPS_MAX_LEASE = env_float("FLEXZONE_OPS_MAX_LEASE", 30 * 86400.0, minimum=1.0)
FLEXZONE_OPS_WORKER_CONCURRENCY = env_int("FLEXZONE_OPS_WORKER_CONCURRENCY", 20, minimum=1)
# An operation waits this long (s) for the worker holding its router's session before any worker takes it
# (operations/affinity.py); 0: every operation goes to the shared queue.
FLEXZONE_OPS_AFFINITY_WAIT = env_float("FLEXZONE_OPS_AFFINITY_WAIT", 2.0, minimum=0.0)
# The tamper-evident ledger (operations/ledger.py): the chores seal new audit events and ended
# operations into its hash chain every _SEAL_EVERY seconds and sign its head every _SIGN_EVERY seconds
# with the Ed25519 key in FLEXZONE_LEDGER_KEY (made on first use; default: in FLEXZONE_SECRETS_DIR).
FLEXZONE_LEDGER_SEAL_EVERY = env_int("FLEXZONE_LEDGER_SEAL_EVERY", 10, minimum=1)
FLEXZONE_LEDGER_SIGN_EVERY = env_int("FLEXZONE_LEDGER_SIGN_EVERY", 300, minimum=1)
FLEXZONE_LEDGER_KEY = env_path("FLEXZONE_LEDGER_KEY", FLEXZONE_SECRETS_DIR / "ledger-ed25519.pem")
# Public keys (hex, comma-separated) whose signatures `manage.py audit verify` also accepts: the other
# worker hosts' keys when each has its own, or keys retired by a rotation.
FLEXZONE_LEDGER_TRUSTED_KEYS = env_list("FLEXZONE_LEDGER_TRUSTED_KEYS", "")
# Where each signed head is also appended (operations/witness.py), out of the database's reach; by
# default beside FLEXZONE_LEDGER_KEY (ledger-heads.jsonl).
FLEXZONE_LEDGER_WITNESS = os.environ.get("FLEXZONE_LEDGER_WITNESS", "")
# A record sealed after records written more than this many seconds later is reported as inserted.
FLEXZONE_LEDGER_GRACE = env_int("FLEXZONE_LEDGER_GRACE", 300, minimum=1)

# --- Prometheus metrics (/metrics) ------------------------------------------------------------------
# Processes that share this directory (the API's gunicorn workers, `manage.py worker` processes on the
# same machine) are reported together by one scrape: prometheus-client keeps each process's counters
# in memory-mapped files there. It must be chosen before prometheus-client is first imported, hence
# here. Empty it before (re)starting the service and its workers. Unset, `serve` gives its own
# workers a private directory (serving/gunicorn_conf.py) and other processes count in memory only.
FLEXZONE_METRICS_DIR = os.environ.get("FLEXZONE_METRICS_DIR", "")
if FLEXZONE_METRICS_DIR:
    Path(FLEXZONE_METRICS_DIR).mkdir(parents=True, exist_ok=True)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = FLEXZONE_METRICS_DIR
