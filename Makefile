# arc-otel: `make run` starts the sidecar and the collector; `make test` runs
# every test. Tools are pinned and installed into ./.tools by `make tools`.

SHELL       := /usr/bin/env bash
GO          ?= go
TOOLS       := $(CURDIR)/.tools
OCB_VERSION := v0.162.0
TELEMETRYGEN_VERSION := v0.161.0
DUCKDB_VERSION := 1.5.6
OCB         := $(TOOLS)/builder
TELEMETRYGEN := $(TOOLS)/telemetrygen
DUCKDB      := $(TOOLS)/duckdb
DATA_DIR    ?= ./data

GO_SOURCES := $(shell find . -name '*.go' -not -path './_build/*' -not -path './.tools/*') go.mod go.sum

.PHONY: all build tools run test chaos fuzz bench lint clean

all: build

build: bin/arcstore bin/otelcol-arc

bin/arcstore: $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./cmd/arcstore

# ocb writes the distribution's sources and binary to _build/; it runs again
# whenever the builder config or any Go source of this module changes.
bin/otelcol-arc: builder-config.yaml $(GO_SOURCES) | $(OCB)
	CGO_ENABLED=0 $(OCB) --config builder-config.yaml
	mkdir -p bin && cp _build/otelcol-arc $@.tmp && mv $@.tmp $@

tools: $(OCB) $(TELEMETRYGEN) $(DUCKDB)

$(OCB):
	GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

$(TELEMETRYGEN):
	GOBIN=$(TOOLS) $(GO) install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$(TELEMETRYGEN_VERSION)

# The DuckDB CLI comes from its PyPI wheel, which carries the static binary.
$(DUCKDB):
	mkdir -p $(TOOLS)/dl
	python3 -m pip download --quiet --no-deps --dest $(TOOLS)/dl duckdb-cli==$(DUCKDB_VERSION)
	cd $(TOOLS) && python3 -c "import zipfile,glob; zipfile.ZipFile(glob.glob('dl/duckdb_cli-$(DUCKDB_VERSION)-*.whl')[0]).extract('duckdb_cli/duckdb', 'dl')"
	mv $(TOOLS)/dl/duckdb_cli/duckdb $@ && chmod +x $@

# Sidecar in the background, collector in the foreground; Ctrl-C stops the
# collector, then the sidecar flushes every buffered row and exits.
run: build
	@mkdir -p $(DATA_DIR)
	@bin/arcstore -data-dir $(DATA_DIR) & pid=$$!; \
	trap 'kill -TERM $$pid 2>/dev/null; wait $$pid' EXIT INT TERM; \
	bin/otelcol-arc --config otelcol-config.yaml

test: tools build
	PATH="$(TOOLS):$$PATH" $(GO) test -race -count=1 -timeout 20m ./...

# The kill loop of TestChaosSidecarKills at full length (make test runs 3 kills).
CHAOS_KILLS ?= 12
chaos: tools build
	ARC_CHAOS_KILLS=$(CHAOS_KILLS) PATH="$(TOOLS):$$PATH" $(GO) test -count=1 -v -run TestChaos -timeout 30m ./internal/e2e/ | grep -E 'chaos:|kill|^(---|ok|FAIL)'

# Each fuzz target for FUZZTIME (the corpus under testdata/fuzz also runs in make test).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeAndCheckBatch -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./storage/
	$(GO) test -run '^$$' -fuzz FuzzDecodeWALRecord -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./storage/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/otlparrow/ ./internal/parquetfile/

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi

clean:
	rm -rf bin _build
