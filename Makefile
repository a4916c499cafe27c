# Two commands do all set-up on a fresh Debian machine:
#   make demo  - run flexzone with its simulated routers (embedded defaults, no root needed)
#   make test  - install what the tests need (venv, PostgreSQL, lab tools, chromium) and run them
# Both are idempotent.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Debian packages the lab tests use (network namespaces, impairment, probes, block-storage data path).
LAB_APT_PACKAGES := iproute2 nftables iptables ethtool iperf3 iputils-ping procps nbdkit fio
# Debian's chromium for the browser tests, driven by Playwright from the venv. Playwright's own browser
# download needs the internet, so `playwright install` is never run; tests/console launches this one by path.
BROWSER_APT_PACKAGES := chromium

# $(call apt-install,WHICH,PACKAGES): as root, install those of PACKAGES that are not installed; otherwise
# say which tests will be skipped. Idempotent: nothing is fetched when all are installed.
define apt-install
@missing=$$(for p in $(2); do dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" = 0 ]; then \
    echo "installing $(1) packages: $$missing"; \
    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
  else echo "$(1) packages missing (root needed to install, $(1) tests will be skipped): $$missing"; fi; \
fi
endef

.PHONY: demo test venv lab-tools browser-tools lint clean-demo

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "python3-venv is missing; as root: apt-get install -y python3-venv"; exit 1; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

lab-tools:
	$(call apt-install,lab,$(LAB_APT_PACKAGES))

browser-tools:
	$(call apt-install,browser,$(BROWSER_APT_PACKAGES))

# The tests run in parallel (pytest-xdist): most of their time is spent waiting on sockets, servers and simulated
# device think time, so there are more workers than cores. Each worker has a test database of its own, copied
# from a migrated template (tests/support/database.py). TEST_WORKERS=0 runs them in this one process.
TEST_WORKERS ?= 4

test: venv lab-tools browser-tools
	@url=$$(scripts/ensure-postgres.sh) && echo "tests use $$url" && \
	DATABASE_URL="$$url" $(VENV)/bin/pytest -n $(TEST_WORKERS) $(PYTEST_ARGS)

demo: venv
	$(PY) scripts/demo.py

# ruff, then mypy with the Django and DRF plugins (configured in pyproject.toml); the plugin imports the
# settings, which need no database: the SQLite default is only a path until something connects.
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

clean-demo:
	rm -rf .demo
