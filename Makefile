# Two commands: `make sample` (set up, then run the sample job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup models sample test clean shared-check

# Models the sample job needs, trained from the bundled sample corpus (seconds).
D := jobs/sample_data
M := models/sample

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel; a bare `torch` pulls GBs of CUDA packages
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,bench]'
	touch $@

setup: $(STAMP)

$(M)/quality.bin: $(STAMP)
	$(BIN)/datapipe quality train --positive '$(D)/wiki/*.parquet' '$(D)/books/*.txt*' \
	  --negative '$(D)/web/*.warc.gz' '$(D)/forum/*.jsonl.zst' \
	  --calibrate '$(D)/web/*.warc.gz' '$(D)/news/*.jsonl*' '$(D)/forum/*.jsonl.zst' '$(D)/wet/*.wet.gz' --out $@

$(M)/lm/en.arpa: $(STAMP)
	$(BIN)/datapipe lm train --input '$(D)/wiki/*.parquet' --order 5 --out $@

$(M)/lm/cutoffs.csv: $(M)/lm/en.arpa
	$(BIN)/datapipe lm cutoffs --model $< --input '$(D)/web/*.warc.gz' '$(D)/news/*.jsonl*' \
	  '$(D)/forum/*.jsonl.zst' '$(D)/wet/*.wet.gz' --langid "$${DATAPIPE_SHARED:-../shared}/models/lid.176.ftz" --out $@

$(M)/tokenizer/tokenizer.json: $(STAMP)
	$(BIN)/datapipe tokenizer train --source-glob '$(D)/wiki/*.parquet' --source-glob '$(D)/books/*.txt*' \
	  --source-glob '$(D)/news/*.jsonl*' --source-glob '$(D)/forum/*.jsonl.zst' --vocab-size 4096 --out $(M)/tokenizer

models: $(M)/quality.bin $(M)/lm/cutoffs.csv $(M)/tokenizer/tokenizer.json

shared-check:
	@test -d "$${DATAPIPE_SHARED:-../shared}/models" || { echo "the sample job's language-ID model comes from ../shared/models/lid.176.ftz: put the shared/ folder beside the repo or set DATAPIPE_SHARED" >&2; exit 1; }

sample: shared-check setup models
	$(BIN)/datapipe run jobs/sample.yaml
	$(BIN)/datapipe shards verify runs/sample/shards
	$(BIN)/datapipe mix plan mixes/sample.yaml

test: setup models
	$(BIN)/python -m pytest -q

clean:
	rm -rf runs/ models/ .pytest_cache
