# coadapt: every target creates and reuses the local virtual environment .venv.
VENV     ?= .venv
PY       := $(VENV)/bin/python
STAMP    := $(VENV)/.installed-stamp
WORKLOAD ?= philly-small
PROFILES ?= profiles
POLICY   ?= all
CLUSTER  ?= 8x2
INTERVAL ?= 15
RESTART  ?=
OUT      ?= out/sim
REF      ?= ../shared/reference/adaptdl
EXTRAS   ?= dev
SEEDS    ?= 5
JOBS     ?=
EXP_OUT  ?= out/experiment

.PHONY: venv test simulate live calibrate profile report lint bench-reference philly-small workloads experiment clean help

# make live has its own defaults; a value given on the command line wins.
given = $(if $(filter command line,$(origin $(1))),$($(1)),$(2))
LIVE_WORKLOAD = $(call given,WORKLOAD,live-mixed-5)
LIVE_POLICY   = $(call given,POLICY,pollux)
LIVE_CLUSTER  = $(call given,CLUSTER,1x2)
LIVE_INTERVAL = $(call given,INTERVAL,15)
LIVE_OUT      = $(call given,OUT,out/live)

help:
	@echo "make simulate [WORKLOAD=philly-small PROFILES=profiles POLICY=all CLUSTER=8x2 INTERVAL=15 RESTART=seconds]"
	@echo "make live [WORKLOAD=live-mixed-5 POLICY=pollux|all CLUSTER=1x2 INTERVAL=15 OUT=out/live]"
	@echo "make calibrate | make test | make profile [QUICK=1] [PROFILE_OUT=dir] | make report OUT=out/sim"
	@echo "make lint | make bench-reference [REF=../shared/reference/adaptdl]"
	@echo "make experiment [SEEDS=5 JOBS=2 EXP_OUT=out/experiment] (the study: CPU sets x policies x seeds, simulated)"
	@echo "make workloads (rewrite traces/cpu-*.csv: the named CPU workload sets, seed 1, 8x2)"

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[$(EXTRAS)]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

simulate: $(STAMP)
	$(VENV)/bin/coadapt simulate --workload $(WORKLOAD) --profiles $(PROFILES) \
		--policy $(POLICY) --cluster $(CLUSTER) --interval $(INTERVAL) \
		$(if $(RESTART),--restart-delay $(RESTART)) --out $(OUT)

# Calibrate this machine (or CALIBRATION=file), write the prediction, run real processes
# on this machine's cores, then compare with the prediction.
live: $(STAMP)
	$(VENV)/bin/coadapt live --workload $(LIVE_WORKLOAD) --profiles $(PROFILES) \
		--policy $(LIVE_POLICY) --cluster $(LIVE_CLUSTER) --interval $(LIVE_INTERVAL) --out $(LIVE_OUT) \
		$(if $(CALIBRATION),--calibration $(CALIBRATION))

# Measure live start/restart/validation/verification/co-location costs into PROFILES.
calibrate: $(STAMP)
	$(VENV)/bin/coadapt calibrate --profiles $(PROFILES) $(if $(QUICK),--quick)

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

# Rewrite the named CPU workload sets (traces/cpu-*.csv) from the shipped profiles,
# seed 1, requests tuned at the simulator's truth on 8x2 with a 10 Gbit/s network.
workloads: $(STAMP)
	$(VENV)/bin/coadapt workload sets --profiles profiles --cluster 8x2 --seed 1 --out traces

# The scheduling study (simulated): every named CPU set x the five policies x SEEDS seeds.
experiment: $(STAMP)
	$(VENV)/bin/coadapt experiment --seeds $(SEEDS) --profiles $(PROFILES) --out $(EXP_OUT) \
		$(if $(JOBS),--jobs $(JOBS))

report: $(STAMP)
	$(VENV)/bin/coadapt report $(OUT)

lint: $(STAMP)
	$(VENV)/bin/ruff check src tests benchmarks

bench-reference: $(STAMP)
	$(PY) benchmarks/reference_fidelity.py --ref $(REF)

clean:
	rm -rf out .pytest_cache
