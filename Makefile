# DJSB: the two commands of the README, and the steps they share.
#   make demo   set everything up, then run configs/local-quick.yaml (a few minutes on 2 cores)
#   make test   set everything up, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test setup apps lint clean reference readme-numbers readme-numbers-check history-numbers

demo: setup
	$(BIN)/djsb run configs/local-quick.yaml

# Five pytests side by side, each with its own log, printed in turn at the end; the target fails if
# any does. The live tests (of the shared daemons: Slurm, its container, sshd, Grid Engine, OpenLava; marked
# `live` by tests/conftest.py) share the Slurm mini-cluster one after another, but the calibrations
# whose outcome depends on Slurm's own timing (marked `alone`) run on a second mini-cluster
# (.ci/slurm-second.env) with nothing else on it; the calibrations over SSH stay on the first, which
# the login node's shell reaches. The other tests run at niceness 19 in three parts (the paper
# reproductions, then the rest by file name: a-m, n-z), so that the daemons' timing is not theirs to
# move; most of them wait on processes and clocks more than they compute.
SECOND = $(shell grep -v '^\#' .ci/slurm-second.env)
LANES = calibrations other-live reproductions others-a-m others-n-z

test: setup
	@logs=$$(mktemp -d); \
	env $(SECOND) $(BIN)/pytest -q -ra --durations=15 -m "live and alone and not ssh" > $$logs/calibrations 2>&1 & p1=$$!; \
	$(BIN)/pytest -q -ra --durations=15 -m "live and not (alone and not ssh)" > $$logs/other-live 2>&1 & p2=$$!; \
	nice -n 19 $(BIN)/pytest -q -ra --durations=15 -m "not live" tests/test_reproduce*.py > $$logs/reproductions 2>&1 & p3=$$!; \
	nice -n 19 $(BIN)/pytest -q -ra --durations=15 -m "not live" --ignore-glob='tests/test_reproduce*.py' \
		--ignore-glob='tests/test_[n-z]*.py' > $$logs/others-a-m 2>&1 & p4=$$!; \
	nice -n 19 $(BIN)/pytest -q -ra --durations=15 -m "not live" --ignore-glob='tests/test_reproduce*.py' \
		--ignore-glob='tests/test_[a-m]*.py' > $$logs/others-n-z 2>&1 & p5=$$!; \
	failed=0; for p in $$p1 $$p2 $$p3 $$p4 $$p5; do wait $$p || failed=1; done; \
	for lane in $(LANES); do echo "== $$lane"; cat $$logs/$$lane; done; rm -rf $$logs; \
	test $$failed -eq 0

setup: $(VENV)/.installed apps

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[test]'
	touch $@

apps:
	$(MAKE) -C apps

# README.md's measured numbers: rerun the commands they come from (minutes: a replay, a sweep, the demo)
# and rewrite their blocks; the quick ones are also checked by the test suite (tests/test_readme_numbers.py).
readme-numbers: setup
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/readme_numbers.py

readme-numbers-check: setup
	PYTHONPATH=$(CURDIR) $(BIN)/python bench/readme_numbers.py --check

# docs/history.md's ground-truth tables: the committed mini-cluster records replayed offline, and the
# replays with one cause of their error removed at a time (seconds each)
history-numbers: setup
	$(BIN)/python bench/history_ground_truth.py
	$(BIN)/python bench/history_counterfactuals.py

reference: setup
	$(BIN)/python -c "from djsb.model.scheduler import reference; open('docs/reference/scheduler.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.model.sections import reference; open('docs/reference/cluster.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.model.priority.reference import reference; open('docs/reference/priority.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.simulate.experiment import reference; open('docs/reference/workload.md', 'w').write(reference())"
	$(BIN)/python -c "from job_modules.simulated import reference; open('docs/reference/simulated.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.workloads.sacct_columns import reference; open('docs/reference/sacct.md', 'w').write(reference())"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	$(MAKE) -C apps clean
	rm -rf $(VENV) runs
