# coadapt: every target creates and reuses the local virtual environment .venv.
VENV     ?= .venv
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.installed-stamp
WORKLOAD ?= philly-small
PROFILES ?= profiles
POLICY   ?= all
CLUSTER  ?= 4x4
INTERVAL ?= 30
RESTART  ?= 5
OUT      ?= out/sim
REF      ?= ../shared/reference/adaptdl

.PHONY: venv test simulate profile report lint bench-reference philly-small clean help

help:
	@echo "make simulate [WORKLOAD=philly-small PROFILES=profiles POLICY=all CLUSTER=4x4 INTERVAL=30 RESTART=5]"
	@echo "make test | make profile [QUICK=1] [PROFILE_OUT=dir] | make report OUT=out/sim | make lint"
	@echo "make bench-reference [REF=../shared/reference/adaptdl]"

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

simulate: $(STAMP)
	$(VENV)/bin/coadapt simulate --workload $(WORKLOAD) --profiles $(PROFILES) \
		--policy $(POLICY) --cluster $(CLUSTER) --interval $(INTERVAL) --restart-delay $(RESTART) --out $(OUT)

# The full run rewrites the shipped profiles/; a quick pass goes to out/profiles-quick
# unless PROFILE_OUT says otherwise.
profile: $(STAMP)
	$(VENV)/bin/coadapt profile --out $(or $(PROFILE_OUT),$(if $(QUICK),out/profiles-quick,profiles)) \
		$(if $(QUICK),--quick,)

# Regenerate the shipped default workload from the shipped profiles (seeded).
philly-small: $(STAMP)
	$(VENV)/bin/coadapt workload generate --profiles profiles --jobs 30 --window 0.5 \
		--mix small=0.6,medium=0.25,large=0.15 --cluster 4x4 --seed 1 \
		--classes "small=mlp-mnist1d,cnn-mnist1d;medium=transformer-text;large=lstm-text;xlarge=lstm-text" \
		--out traces/philly-small.csv

report: $(STAMP)
	$(VENV)/bin/coadapt report $(OUT)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench-reference: $(STAMP)
	$(PY) benchmarks/reference_fidelity.py --ref $(REF)

clean:
	rm -rf out .pytest_cache
