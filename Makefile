# coadapt: every target creates and reuses the local virtual environment .venv.
VENV     ?= .venv
PY       := $(VENV)/bin/python
WORKLOAD ?= philly-small
PROFILES ?= profiles
POLICY   ?= all
CLUSTER  ?= 8x2
INTERVAL ?= 15
RESTART  ?=
OUT      ?= out/sim
REF      ?= ../shared/reference/adaptdl
EXTRAS   ?=
SEEDS    ?= 5
JOBS     ?=
EXP_OUT  ?= out/experiment

.PHONY: venv test simulate live calibrate profile report lint bench-reference philly-small workloads experiment study study-kinds netbench live-net clean help

# make live has its own defaults; a value given on the command line wins.
given = $(if $(filter command line,$(origin $(1))),$($(1)),$(2))
LIVE_WORKLOAD = $(call given,WORKLOAD,live-mixed-5)
LIVE_POLICY   = $(call given,POLICY,pollux)
LIVE_CLUSTER  = $(call given,CLUSTER,1x2)
LIVE_INTERVAL = $(call given,INTERVAL,15)
LIVE_OUT      = $(call given,OUT,out/live)

help:
	@echo "make simulate [WORKLOAD=philly-small PROFILES=profiles POLICY=all CLUSTER=8x2 INTERVAL=15 RESTART=seconds OUT=out/sim] (replaces OUT)"
	@echo "make live [WORKLOAD=live-mixed-5 POLICY=pollux|all CLUSTER=1x2 INTERVAL=15 OUT=out/live]"
	@echo "make calibrate | make test | make profile [QUICK=1] [PROFILE_OUT=dir] | make report OUT=out/sim"
	@echo "make lint | make bench-reference [REF=../shared/reference/adaptdl]"
	@echo "make experiment [SEEDS=5 JOBS=2 EXP_OUT=out/experiment] (the study: CPU sets x policies x seeds, simulated)"
	@echo "make study [SEEDS=5] (objectives: Pareto; priorities; sensitivity to restart cost, profile error, network; ~15 min, simulated)"
	@echo "make study-kinds [SEEDS=5 KIND_CLUSTER=4x2:native,4x2:legacy] (kinds of node: mixed vs homogeneous cluster, sia/gavel/pollux, bootstrap error; ~10 min, simulated)"
	@echo "make workloads (rewrite traces/cpu-*.csv: the named CPU workload sets, seed 1, 8x2)"
	@echo "make netbench [NET_OUT=out/netbench] (gloo all-reduce between emulated nodes: the network calibration; root, ~6 min)"
	@echo "make live-net [NET_BW=1 NET_SET=live-net-a] (live on 2 emulated nodes, 2x1, fixed/dynamic/pollux; root)"

# What each target installs: the base package (the simulator, no torch), or with the
# live extra (torch: real jobs), or everything the tests need; EXTRAS adds more (e.g. ray).
# One stamp per set, so a target installs what it needs once and reuses it.
comma := ,
empty :=
space := $(empty) $(empty)
extras = $(subst $(space),$(comma),$(strip $(1) $(subst $(comma),$(space),$(EXTRAS))))
stamp  = $(VENV)/.installed-$(or $(subst $(comma),-,$(1)),base)
BASE   := $(call stamp,$(call extras,))
LIVE   := $(call stamp,$(call extras,live))
TESTS  := $(call stamp,$(call extras,dev live))
STAMP  := $(BASE)

$(VENV)/.installed-%: pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check \
		-e '.$(if $(filter base,$*),,[$(subst -,$(comma),$*)])'
	touch $@

venv: $(TESTS)

# Two at once (pytest-xdist), then the tests that need the machine alone (-m exclusive).
test: $(TESTS)
	$(PY) -m pytest -n 2 --dist loadgroup -m "not exclusive"
	$(PY) -m pytest -m exclusive

simulate: $(STAMP)
	$(VENV)/bin/coadapt simulate --workload $(WORKLOAD) --profiles $(PROFILES) \
		--policy $(POLICY) --cluster $(CLUSTER) --interval $(INTERVAL) \
		$(if $(RESTART),--restart-delay $(RESTART)) --out $(OUT) --force

# Calibrate this machine (or CALIBRATION=file), write the prediction, run real processes
# on this machine's cores, then compare with the prediction.
live: $(LIVE)
	$(VENV)/bin/coadapt live --workload $(LIVE_WORKLOAD) --profiles $(PROFILES) \
		--policy $(LIVE_POLICY) --cluster $(LIVE_CLUSTER) --interval $(LIVE_INTERVAL) --out $(LIVE_OUT) \
		$(if $(CALIBRATION),--calibration $(CALIBRATION))

# Real gloo all-reduce between emulated nodes (network namespaces, tc-shaped links):
# the measured-vs-declared table and the network calibration (OUT/network.json). Root.
NET_OUT ?= out/netbench
netbench: $(LIVE)
	$(VENV)/bin/coadapt netbench --out $(NET_OUT)

# Live on two emulated nodes (2x1) at NET_BW Gbit/s per link: calibrate, measure the
# network, predict, run fixed, dynamic and pollux, compare. Root.
NET_BW  ?= 1
NET_SET ?= live-net-a
live-net: $(LIVE)
	$(VENV)/bin/coadapt live --cluster 2x1 --network emulated --bandwidth $(NET_BW) \
		--workload $(NET_SET) --policy fixed,dynamic,pollux --out out/live-net/$(NET_SET)-$(NET_BW)

# Measure live start/restart/validation/verification/co-location costs into PROFILES.
calibrate: $(LIVE)
	$(VENV)/bin/coadapt calibrate --profiles $(PROFILES) $(if $(QUICK),--quick)

# The full run rewrites the shipped profiles/; a quick pass goes to out/profiles-quick
# unless PROFILE_OUT says otherwise.
profile: $(LIVE)
	$(VENV)/bin/coadapt profile --out $(or $(PROFILE_OUT),$(if $(QUICK),out/profiles-quick,profiles)) \
		$(if $(QUICK),--quick,)

# Regenerate the shipped default workload from the shipped profiles (seeded).
philly-small: $(STAMP)
	$(VENV)/bin/coadapt workload generate --profiles profiles --num-jobs 30 --window 0.5 \
		--mix small=0.6,medium=0.25,large=0.15 --cluster 4x4 --seed 1 \
		--classes "small=mlp-mnist1d,cnn-mnist1d;medium=transformer-text;large=lstm-text;xlarge=lstm-text" \
		--out traces/philly-small.csv

# Rewrite the named CPU workload sets (traces/cpu-*.csv) from the shipped profiles,
# seed 1, requests tuned at the simulator's truth on 8x2 with a 10 Gbit/s network.
workloads: $(STAMP)
	$(VENV)/bin/coadapt workload sets --profiles profiles --cluster 8x2 --seed 1 --out traces

# The scheduling study (simulated): every named CPU set x the five policies x SEEDS seeds.
experiment: $(STAMP)
	$(VENV)/bin/coadapt experiment --seeds $(SEEDS) --profiles $(PROFILES) --out $(EXP_OUT) --resume \
		$(if $(JOBS),--parallel $(JOBS))

# The objective, priority and sensitivity studies (simulated; ~15 min on 2 cores),
# each an experiment folder under out/study/ with its figure and table.
STUDY    := $(VENV)/bin/coadapt experiment --seeds $(SEEDS) --profiles $(PROFILES) --no-progress --resume
STUDY_MEASURED_RESTART ?= 3.08
study: $(STAMP)
	$(STUDY) --workloads cpu-load4,cpu-load8,cpu-burst --out out/study/pareto \
		--policy fixed,dynamic,pollux,pollux-p+1,pollux-p-0.5,pollux-p-2,pollux-p-8,pollux-fair
	$(PY) benchmarks/study.py pareto out/study/pareto
	$(STUDY) --workloads cpu-priority,cpu-load8 --out out/study/priority \
		--policy fixed,tiresias,dynamic,pollux,pollux-fair
	$(PY) benchmarks/study.py priority out/study/priority cpu-priority cpu-load8
	for x in 0.25 0.5 1 2 4 8; do \
		$(STUDY) --workloads cpu-load4 --policy fixed,dynamic,pollux --calibration none \
			--restart-delay $$(python3 -c "print($(STUDY_MEASURED_RESTART)*$$x)") \
			--out out/study/restart/x$$x || exit 1; done
	$(PY) benchmarks/study.py sweep "restart delay (x $(STUDY_MEASURED_RESTART) s)" out/study/restart/x*
	for s in 0 1 3; do $(STUDY) --workloads cpu-load4 --policy fixed,dynamic,pollux \
		--observation-noise $$s --out out/study/noise/s$$s || exit 1; done
	$(PY) benchmarks/study.py sweep "observation noise S" out/study/noise/s*
	$(STUDY) --workloads cpu-load4 --policy fixed,dynamic,pollux --bandwidth 1,10,100 \
		--out out/study/network/all
	$(PY) benchmarks/study.py sweep "network bandwidth (Gbit/s)" out/study/network/all --column bandwidth
	$(STUDY) --workloads cpu-load4,cpu-load8,cpu-burst --policy fixed,dynamic,pollux \
		--efficiency-truth formula --out out/study/truth/t0
	$(STUDY) --workloads cpu-load4,cpu-load8,cpu-burst --policy fixed,dynamic,pollux \
		--efficiency-truth curves --out out/study/truth/t1
	$(PY) benchmarks/study.py sweep "efficiency truth (0 = gain formula, 1 = measured curves)" \
		out/study/truth/t0 out/study/truth/t1

# Kinds of node (simulated): the named sets on a mixed cluster and on a homogeneous
# control (without the oracle), and Sia's bootstrap error as a sensitivity (pollux does
# not read the bootstrap; fixed is the sweep's baseline).
KIND_CLUSTER ?= 4x2:native,4x2:legacy
KIND_SETS    ?= cpu-load4,cpu-burst
KIND_POLICIES := fixed,dynamic,tiresias,gavel,gavel-ftf-oracle,pollux,sia
study-kinds: $(STAMP)
	$(STUDY) --workloads $(KIND_SETS) --policy $(KIND_POLICIES) --cluster $(KIND_CLUSTER) \
		--out out/study/kinds/mixed
	$(STUDY) --workloads $(KIND_SETS) --policy $(subst gavel-ftf-oracle$(comma),,$(KIND_POLICIES)) \
		--cluster 8x2 --out out/study/kinds/homogeneous
	for e in 0 0.25 0.5 1; do $(STUDY) --workloads $(KIND_SETS) --cluster $(KIND_CLUSTER) \
		--policy fixed,gavel,sia --bootstrap-error $$e \
		--out out/study/kinds/bootstrap/e$$e || exit 1; done
	$(PY) benchmarks/study.py sweep "Sia's bootstrap error E" out/study/kinds/bootstrap/e*

report: $(STAMP)
	$(VENV)/bin/coadapt report $(OUT)

# Style (ruff) and the layer contracts (import-linter, [tool.importlinter] in pyproject.toml;
# docs/architecture.md explains them).
lint: $(TESTS)
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/lint-imports

bench-reference: $(STAMP)
	$(PY) benchmarks/reference_fidelity.py --ref $(REF)

clean:
	rm -rf out .pytest_cache
