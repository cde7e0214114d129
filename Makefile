# DJSB: the two commands of the README, and the steps they share.
#   make demo   set everything up, then run configs/local-quick.yaml (a few minutes on 2 cores)
#   make test   set everything up, then run the test suite
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: demo test setup apps lint clean reference readme-numbers readme-numbers-check

demo: setup
	$(BIN)/djsb run configs/local-quick.yaml

# The live tests whose outcome depends on Slurm's timing (marked `alone`) first, with nothing beside
# them; then two pytests side by side: the other tests of the shared daemons (Slurm, its container,
# sshd, Grid Engine; marked `live` by tests/conftest.py) one after another in one, every other test in
# the other. The second live report follows; the target fails if any of the three does.
test: setup
	@$(BIN)/pytest -q -ra -m "live and alone"; alone=$$?; \
	live_log=$$(mktemp); \
	$(BIN)/pytest -q -ra -m "live and not alone" > $$live_log 2>&1 & live=$$!; \
	$(BIN)/pytest -q -ra -m "not live"; others=$$?; \
	wait $$live; live_rc=$$?; \
	echo "== the other live tests (run beside the rest)"; cat $$live_log; rm -f $$live_log; \
	test $$alone -eq 0 -a $$others -eq 0 -a $$live_rc -eq 0

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

reference: setup
	$(BIN)/python -c "from djsb.model.scheduler import reference; open('docs/reference/scheduler.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.model.sections import reference; open('docs/reference/cluster.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.model.priority.reference import reference; open('docs/reference/priority.md', 'w').write(reference())"
	$(BIN)/python -c "from djsb.simulate.experiment import reference; open('docs/reference/workload.md', 'w').write(reference())"

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy

clean:
	$(MAKE) -C apps clean
	rm -rf $(VENV) runs
