# Two commands do all set-up on a fresh Debian machine:
#   make demo  - run flexzone with its simulated routers (embedded defaults, no root needed)
#   make test  - install what the tests need (venv, PostgreSQL, lab tools) and run them
# Both are idempotent.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# Debian packages the lab tests use (network namespaces, impairment, probes, block-storage data path).
LAB_APT_PACKAGES := iproute2 nftables iptables ethtool iperf3 iputils-ping procps nbdkit fio

.PHONY: demo test venv lab-tools lint clean-demo

venv: $(STAMP)

$(STAMP): pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "python3-venv is missing; as root: apt-get install -y python3-venv"; exit 1; }
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	@touch $@

lab-tools:
	@missing=$$(for p in $(LAB_APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing lab packages: $$missing"; \
	    DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "lab packages missing (root needed to install, lab tests will be skipped): $$missing"; fi; \
	fi

test: venv lab-tools
	@url=$$(scripts/ensure-postgres.sh) && echo "tests use $$url" && \
	DATABASE_URL="$$url" $(VENV)/bin/pytest $(PYTEST_ARGS)

demo: venv
	$(PY) scripts/demo.py

lint: venv
	$(VENV)/bin/ruff check .

clean-demo:
	rm -rf .demo
