# iolab: `make lab` opens the course, `make test` runs every test, notebook and exercise solution.
# Both set up what they need first (idempotent: the second run takes seconds).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := .make
GCSFUSE_VERSION := v3.11.4
TOXIPROXY_VERSION := v2.12.0
PYTEST_NB := --nbval-lax --nbval-current-env --nbval-cell-timeout=120
LAB_PORT ?= 8888

.PHONY: lab test test-fast test-lesson lint setup system exercises strip check-notebooks html site doctor clean

setup: system $(STAMP)/venv $(STAMP)/kernel $(STAMP)/nbconvert $(STAMP)/gcsfuse $(STAMP)/toxiproxy

system:
	@scripts/system-packages.sh

$(STAMP)/venv: pyproject.toml
	@mkdir -p $(STAMP)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e ".[lab,objectstore,workflows,grading,test]"
	@touch $@

# the course's kernel (IPython without the debugger, whose debugpy port on 127.0.0.1 any user of the
# machine could attach to: iolab/kernel.py), in the environment's own share/jupyter/kernels
$(STAMP)/kernel: $(STAMP)/venv iolab/kernel.py
	$(BIN)/python -m iolab.kernel install --prefix $(abspath $(VENV))
	@touch $@

# `jupyter nbconvert --execute` of this environment: iolab's kernel client (nbclient's could lose a cell's
# reply and wait forever: iolab/nbexec.py) and a per-cell timeout, in .venv/etc/jupyter
$(STAMP)/nbconvert: $(STAMP)/venv iolab/nbexec.py
	$(BIN)/python -m iolab.nbexec install --prefix $(abspath $(VENV))
	@touch $@

# gcsfuse is in no Debian release: build it with Go when Go is here (lesson 06 skips it otherwise).
$(STAMP)/gcsfuse: | $(STAMP)/venv
	@if command -v go >/dev/null && [ ! -x $(BIN)/gcsfuse ] && ! command -v gcsfuse >/dev/null; then \
	  echo "building gcsfuse $(GCSFUSE_VERSION) with Go (a few minutes, once)"; \
	  GOTOOLCHAIN=local GOBIN=$(abspath $(BIN)) go install github.com/googlecloudplatform/gcsfuse/v3@$(GCSFUSE_VERSION) \
	    || echo "gcsfuse did not build; lesson 06 runs without it"; \
	fi
	@touch $@

# toxiproxy makes the local object store slow like a remote one (lesson 06); Go names it "server".
$(STAMP)/toxiproxy: | $(STAMP)/venv
	@if command -v go >/dev/null && [ ! -x $(BIN)/toxiproxy-server ] && ! command -v toxiproxy-server >/dev/null; then \
	  echo "building toxiproxy $(TOXIPROXY_VERSION) with Go (once)"; \
	  tmp=$$(mktemp -d) && GOTOOLCHAIN=local GOBIN=$$tmp go install github.com/Shopify/toxiproxy/v2/cmd/server@$(TOXIPROXY_VERSION) \
	    && install -m 755 $$tmp/server $(BIN)/toxiproxy-server \
	    || echo "toxiproxy did not build; lesson 06 replays its timed parts"; rm -rf $$tmp; \
	fi
	@touch $@

# The kernels talk to the server over unix sockets in a directory only you can enter (mktemp -d: 0700,
# removed when the server exits), not over TCP ports on 127.0.0.1, where any user of the machine can
# subscribe to a kernel's output without its key (docs/jupyterhub.md, "Kernel traffic"). A short path
# in /tmp: a socket's path must fit in 107 bytes, which a home's .local/share/jupyter/runtime may not.
lab: setup
	@token=$${JUPYTER_TOKEN:-$$($(BIN)/python -c 'import secrets; print(secrets.token_hex(24))')}; \
	root=$$( [ "$$(id -u)" = 0 ] && echo --allow-root ); \
	runtime=$$(mktemp -d /tmp/iolab-lab.XXXXXX) && trap 'rm -rf "$$runtime"' EXIT && trap : INT TERM || exit 1; \
	echo "Open http://127.0.0.1:$(LAB_PORT)/lab/tree/notebooks/00-start-here.ipynb?token=$$token"; \
	JUPYTER_RUNTIME_DIR=$$runtime PATH="$(abspath $(BIN)):$$PATH" $(BIN)/jupyter lab --no-browser \
	  --ip=127.0.0.1 --port=$(LAB_PORT) --KernelManager.transport=ipc \
	  --KernelSpecManager.allowed_kernelspecs=iolab --MappingKernelManager.default_kernel_name=iolab \
	  --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/00-start-here.ipynb \
	  --IdentityProvider.token=$$token $$root

test: setup $(STAMP)/site
	$(BIN)/ruff check --no-cache .
	$(BIN)/mypy
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -p no:cacheprovider --timeout=900 \
	  tests notebooks exercises/solutions $(PYTEST_NB)

# the tests not marked slow, no notebooks: the subset to run while working (a few minutes)
test-fast: setup
	$(BIN)/ruff check --no-cache .
	$(BIN)/mypy
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -p no:cacheprovider --timeout=900 -m "not slow" tests

# one lesson: make test-lesson L=03 runs its tests (the folder tests/lessons/l03/), notebook and solution
test-lesson: setup
	@test -n "$(L)" || { echo "which lesson? make test-lesson L=03"; exit 2; }
	@test -d tests/lessons/l$(L) || { echo "no lesson $(L): the lessons are $$(ls tests/lessons | sed -n 's/^l//p' | tr '\n' ' ')"; exit 2; }
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m pytest -p no:cacheprovider --timeout=900 \
	  tests/lessons/l$(L) notebooks/$(L)-*.ipynb exercises/solutions/$(L)-*.ipynb $(PYTEST_NB)

lint: $(STAMP)/venv
	$(BIN)/ruff check --no-cache .
	$(BIN)/mypy

exercises: $(STAMP)/venv
	$(BIN)/python -m iolab.nbtools exercises

strip: $(STAMP)/venv
	$(BIN)/python -m iolab.nbtools strip

check-notebooks: $(STAMP)/venv
	$(BIN)/python -m iolab.nbtools check

# a lesson as one HTML file to share or read without a kernel (make html L=04; all lessons without L):
# executed without widget state, so every chart, the controls' too, is drawn offline (iolab/nbtools.py)
html: setup
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m iolab.nbtools html $(if $(L),notebooks/$(L)-*.ipynb) --out build/html

# the whole course as one static site, build/site/index.html, that needs no kernel and no network: every
# lesson executed in replay mode (from the recordings; cached in build/site-cache, so a second build executes
# only what changed), the exercises, the instructor notebook, docs/ and the API reference (iolab/site.py)
$(STAMP)/site: $(STAMP)/venv pyproject.toml
	$(BIN)/python -m pip install -q -e ".[site]"
	@touch $@

site: setup $(STAMP)/site
	PATH="$(abspath $(BIN)):$$PATH" $(BIN)/python -m iolab.site build

doctor: setup
	@PATH="$(abspath $(BIN)):$$PATH" $(BIN)/iolab doctor

clean:
	-@test -x $(BIN)/iolab && $(BIN)/iolab clean
	rm -rf $(VENV) $(STAMP) *.egg-info
