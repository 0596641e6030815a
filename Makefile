# arc-otel: `make run` starts the sidecar and the collector; `make test` runs
# every test. Tools are pinned and installed into ./.tools by `make tools`.

SHELL       := /usr/bin/env bash
GO          ?= go
TOOLS       := $(CURDIR)/.tools
OCB_VERSION := v0.162.0
# mdatagen v0.162.0 is not served by the module proxy; v0.161.0 generates
# the same files for this component.
MDATAGEN_VERSION := v0.161.0
TELEMETRYGEN_VERSION := v0.161.0
DUCKDB_VERSION := 1.5.6
PYARROW_VERSION := 22.0.0
POLARS_VERSION := 2.1.0
# DataFusion's Python bindings and the two pure-Python packages they import
# (pyarrow is .tools/py's).
DATAFUSION_VERSION := 55.0.0
CLOUDPICKLE_VERSION := 3.1.2
TYPING_EXTENSIONS_VERSION := 4.16.0
PYSPARK_VERSION := 4.1.4
# The jars Spark reads the Iceberg tables with, and the plugin that copies
# them from Maven Central.
ICEBERG_SPARK_RUNTIME := org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0
SQLITE_JDBC := org.xerial:sqlite-jdbc:3.54.1.0
MAVEN_DEPENDENCY_PLUGIN := org.apache.maven.plugins:maven-dependency-plugin:3.8.1
# DuckDB with its iceberg extension: the extension wheels are built for
# this DuckDB release only.
DUCKDB_ICEBERG_VERSION := 1.4.4
DUCKDB_EXT_VERSION := 1.4.4.20260205
CHDB_VERSION := 26.9.0
VERSITYGW_VERSION := v1.8.0
TELEGRAF_VERSION := v1.37.2
OCB         := $(TOOLS)/builder
# The collector users already run, for the side-by-side of
# loadtest-contrib-clickhouse: ocb writes its own core release into the
# generated go.mod, so the contrib manifest (loadtest/contrib) is built by
# the ocb of its release, installed beside ours.
CONTRIB_OCB_VERSION := v0.165.0
CONTRIB_OCB := $(TOOLS)/ocb-$(CONTRIB_OCB_VERSION)/builder
CONTRIB_COLLECTOR := _build/contrib-clickhouse/otelcol-contrib-clickhouse
MDATAGEN    := $(TOOLS)/mdatagen
TELEMETRYGEN := $(TOOLS)/telemetrygen
DUCKDB      := $(TOOLS)/duckdb
PYARROW     := $(TOOLS)/py/pyarrow
POLARS      := $(TOOLS)/polars/polars
DATAFUSION  := $(TOOLS)/datafusion/datafusion
PYSPARK     := $(TOOLS)/spark/pyspark
SPARK_JARS  := $(TOOLS)/spark-jars/.installed
DUCKDB_ICEBERG := $(TOOLS)/duckdb-iceberg/.installed
CHDB        := $(TOOLS)/chdb/chdb
VERSITYGW   := $(TOOLS)/versitygw
TELEGRAF    := $(TOOLS)/telegraf
PYCLIENTS   := $(TOOLS)/pyclients/.installed
PYICEBERG   := $(TOOLS)/pyiceberg/.installed
# Debian's PostgreSQL server: the shared Iceberg catalog of the tests.
POSTGRES    := /usr/lib/postgresql
DATA_DIR    ?= ./data
# What `arcstore -version` prints: the git tag and commit of the checkout.
VERSION     := $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
# DOCKER=install lets `make test` install docker.io and docker-compose and
# start a root dockerd for TestDockerCompose (Debian); CI=true implies it.
# Otherwise an engine already running is used, and the test skips without one.
DOCKER      ?= $(if $(filter true 1,$(CI)),install,)

GO_SOURCES := $(shell find . -name '*.go' -not -path './_build/*' -not -path './.tools/*') go.mod go.sum

.PHONY: all build otelcol generate tools run test engine images chaos fuzz bench lint clean \
	loadtest-traces loadtest-logs loadtest-metrics loadtest-mixed loadtest-sweep \
	loadtest-arc-metrics loadtest-arc-logs loadtest-arc-traces loadtest-arc-events loadtest-arc-mixed \
	loadtest-arc-logs-cycled loadtest-arc-traces-cycled \
	loadtest-campaign querybench loadtest-arc demo loadtest-clickhouse loadtest-latency \
	contrib-clickhouse loadtest-contrib-clickhouse

all: build

build: bin/arcstore bin/otelcol-arc bin/arcload bin/healthcheck

bin/arcstore: $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/arcstore

bin/healthcheck: $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./cmd/healthcheck

bin/arcload: $(GO_SOURCES)
	CGO_ENABLED=0 $(GO) build -trimpath -o $@ ./loadtest/cmd/arcload

otelcol: bin/otelcol-arc

# What the collector compiles from this module: the exporter and the
# internal packages it imports.
OTELCOL_SOURCES := builder-config.yaml go.mod go.sum \
	$(shell find exporter internal -name '*.go' -not -name '*_test.go')

# ocb writes the distribution's sources and binary to _build/; it runs again
# whenever the builder config or a Go source the collector compiles changes.
bin/otelcol-arc: $(OTELCOL_SOURCES) | $(OCB)
	CGO_ENABLED=0 $(OCB) --config builder-config.yaml
	mkdir -p bin && cp _build/otelcol-arc $@.tmp && mv $@.tmp $@

tools: $(OCB) $(MDATAGEN) $(TELEMETRYGEN) $(DUCKDB) $(PYARROW) $(POLARS) $(DATAFUSION) $(PYSPARK) $(CHDB) $(VERSITYGW) $(PYCLIENTS) $(TELEGRAF) $(PYICEBERG) \
	$(SPARK_JARS) $(DUCKDB_ICEBERG) $(POSTGRES)

$(OCB):
	GOBIN=$(TOOLS) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(OCB_VERSION)

$(CONTRIB_OCB):
	GOBIN=$(TOOLS)/ocb-$(CONTRIB_OCB_VERSION) $(GO) install go.opentelemetry.io/collector/cmd/builder@$(CONTRIB_OCB_VERSION)

# The contrib clickhouseexporter's collector (loadtest/contrib/builder-config.yaml).
contrib-clickhouse: $(CONTRIB_COLLECTOR)

$(CONTRIB_COLLECTOR): loadtest/contrib/builder-config.yaml | $(CONTRIB_OCB)
	mkdir -p _build
	CGO_ENABLED=0 $(CONTRIB_OCB) --config loadtest/contrib/builder-config.yaml

# `go install mdatagen@version` refuses mdatagen: its go.mod has replace
# directives. It is built in a throwaway module instead, where the schemagen
# release it asks for (not served by the module proxy) is replaced by the
# nearest one that is.
$(MDATAGEN):
	rm -rf $(TOOLS)/mdatagen-build && mkdir -p $(TOOLS)/mdatagen-build
	cd $(TOOLS)/mdatagen-build && printf '%s\n' 'module mdatagenbuild' 'go 1.26.0' \
		'require go.opentelemetry.io/collector/cmd/mdatagen $(MDATAGEN_VERSION)' \
		'replace go.opentelemetry.io/collector/internal/schemagen => go.opentelemetry.io/collector/internal/schemagen v0.159.0' >go.mod && \
		GOFLAGS=-mod=mod $(GO) build -o $@ go.opentelemetry.io/collector/cmd/mdatagen
	rm -rf $(TOOLS)/mdatagen-build

# Regenerates the exporter's metadata code, documentation.md and generated
# tests from its metadata.yaml.
generate: $(MDATAGEN)
	$(GO) generate ./exporter/...

$(TELEMETRYGEN):
	GOBIN=$(TOOLS) $(GO) install github.com/open-telemetry/opentelemetry-collector-contrib/cmd/telemetrygen@$(TELEMETRYGEN_VERSION)

# The DuckDB CLI comes from its PyPI wheel, which carries the static binary.
$(DUCKDB):
	mkdir -p $(TOOLS)/dl
	python3 -m pip download --quiet --no-deps --dest $(TOOLS)/dl duckdb-cli==$(DUCKDB_VERSION)
	cd $(TOOLS) && python3 -c "import zipfile,glob; zipfile.ZipFile(glob.glob('dl/duckdb_cli-$(DUCKDB_VERSION)-*.whl')[0]).extract('duckdb_cli/duckdb', 'dl')"
	mv $(TOOLS)/dl/duckdb_cli/duckdb $@ && chmod +x $@

# pyarrow, a second engine the tests read our Parquet with (no dependencies
# of its own since 16.0).
$(PYARROW):
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/py pyarrow==$(PYARROW_VERSION)

# Polars, a third DataFrame engine the tests read our Parquet with (with
# its runtime, polars-runtime-32; about 180 MB).
$(POLARS):
	python3 -m pip install --quiet --target $(TOOLS)/polars polars==$(POLARS_VERSION)

# Apache DataFusion, a SQL engine the tests read our Parquet with (about
# 125 MB, seconds to install). Without its dependencies: the tests put
# .tools/py first on PYTHONPATH, so it runs on the pinned pyarrow above and
# no second pyarrow can shadow it; cloudpickle and typing-extensions, which
# it imports, are pinned here.
$(DATAFUSION): | $(PYARROW)
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/datafusion datafusion==$(DATAFUSION_VERSION) \
		cloudpickle==$(CLOUDPICKLE_VERSION) typing-extensions==$(TYPING_EXTENSIONS_VERSION)

# Spark (pyspark with its own jars and py4j; about 490 MB, 2-3 minutes to
# install): the tests read the plain Parquet tree with spark.read.parquet.
# It runs on the machine's Java 17; no Maven artifact is needed for it.
$(PYSPARK):
	python3 -m pip install --quiet --target $(TOOLS)/spark pyspark==$(PYSPARK_VERSION)

# Iceberg's Spark runtime and the SQLite JDBC driver, which Spark reads the
# sidecar's Iceberg tables with through its JDBC catalog (docs/LAKE.md):
# about 60 MB from Maven Central, under a minute. Maven's local repository
# is a throwaway one under .tools, so what ~/.m2 holds (or that it is
# absent) makes no difference.
$(SPARK_JARS):
	rm -rf $(TOOLS)/spark-jars $(TOOLS)/m2
	for a in $(ICEBERG_SPARK_RUNTIME) $(SQLITE_JDBC); do \
		mvn -B -q -Dmaven.repo.local=$(TOOLS)/m2 $(MAVEN_DEPENDENCY_PLUGIN):copy \
			-Dartifact=$$a -DoutputDirectory=$(TOOLS)/spark-jars || exit 1; \
	done
	rm -rf $(TOOLS)/m2
	touch $@

# DuckDB 1.4.4 (the Python package, beside the 1.5 CLI above) with the
# iceberg and avro extensions from their PyPI wheels: `INSTALL iceberg`
# downloads from DuckDB's own site, which make test may not reach, so the
# tests LOAD the files the wheels carry (docs/LAKE.md).
$(DUCKDB_ICEBERG):
	rm -rf $(TOOLS)/duckdb-iceberg
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/duckdb-iceberg duckdb==$(DUCKDB_ICEBERG_VERSION) \
		duckdb-ext-iceberg==$(DUCKDB_EXT_VERSION) duckdb-ext-avro==$(DUCKDB_EXT_VERSION)
	touch $@

# ClickHouse 26.9 embedded in chdb-core: the tests run docs/QUERIES.md's
# ClickHouse queries with it, and tools/chserver.py serves it over the
# native and HTTP protocols.
$(CHDB):
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/chdb chdb-core==$(CHDB_VERSION)

# Versity's S3 gateway: the real S3-compatible server the object-storage
# upload tests run against (SigV4, a bucket on a local directory); static,
# so that the compose file's s3 profile runs it in a scratch image.
$(VERSITYGW):
	CGO_ENABLED=0 GOBIN=$(TOOLS) $(GO) install github.com/versity/versitygw/cmd/versitygw@$(VERSITYGW_VERSION)

# Telegraf with only the plugins its end-to-end test uses, chosen by its
# own build tags (custom plus one tag per plugin): inputs.file reads line
# protocol, both InfluxDB outputs send it. About 4 minutes cold.
$(TELEGRAF):
	GOBIN=$(TOOLS) $(GO) install -tags "custom,inputs.file,outputs.influxdb,outputs.influxdb_v2,parsers.influx,serializers.influx" \
		github.com/influxdata/telegraf/cmd/telegraf@$(TELEGRAF_VERSION)

# The client libraries the end-to-end tests write with: Arc's Python SDK
# and InfluxData's InfluxDB client, every package pinned in
# tools/python-clients.txt.
$(PYCLIENTS): tools/python-clients.txt
	rm -rf $(TOOLS)/pyclients
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/pyclients -r tools/python-clients.txt
	touch $@

# PostgreSQL (Debian's package; the tests start their own clusters with
# its initdb and postgres, as the postgres user when run as root).
$(POSTGRES):
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql

# PyIceberg, which the end-to-end tests read the sidecar's Iceberg tables
# with (docs/LAKE.md), every package pinned in tools/python-iceberg.txt.
$(PYICEBERG): tools/python-iceberg.txt
	rm -rf $(TOOLS)/pyiceberg
	python3 -m pip install --quiet --no-deps --target $(TOOLS)/pyiceberg -r tools/python-iceberg.txt
	touch $@

# Sidecar in the background, collector in the foreground; Ctrl-C stops the
# collector, then the sidecar flushes every buffered row and exits.
# telemetrygen and the DuckDB CLI are for the README's first spans and query.
# GOGC: see COLLECTOR_GOGC.
run: build $(TELEMETRYGEN) $(DUCKDB)
	@mkdir -p $(DATA_DIR)
	@bin/arcstore -data-dir $(DATA_DIR) & pid=$$!; \
	trap 'kill -TERM $$pid 2>/dev/null; wait $$pid' EXIT INT TERM; \
	GOGC=$(COLLECTOR_GOGC) bin/otelcol-arc --config otelcol-config.yaml

# The collector's GC target (docs/OPERATIONS.md): with wait_for_result its
# live heap is small (requests in flight), and most of what it allocates is
# the OTLP receiver's pdata, so collecting at 5x the live heap instead of 2x
# costs about 50 MiB of resident memory and cut its CPU per item by 9-20 %.
# The image (Dockerfile) and the load harness (loadtest/internal/stack) set
# the same.
COLLECTOR_GOGC ?= 400

# ARC_REQUIRE_CLICKHOUSE, ARC_REQUIRE_S3, ARC_REQUIRE_TELEGRAF,
# ARC_REQUIRE_SPARK, ARC_REQUIRE_DUCKDB_ICEBERG: the ClickHouse,
# object-storage, Telegraf, Spark and DuckDB iceberg tests fail, not skip,
# when their server or client is missing (make tools installs them,
# Spark's jars with the machine's Maven; Spark also needs the machine's
# Java 17; CI must run them).
test: tools build engine
	PATH="$(TOOLS):$$PATH" ARC_REQUIRE_CLICKHOUSE=1 ARC_REQUIRE_S3=1 ARC_REQUIRE_TELEGRAF=1 ARC_REQUIRE_SPARK=1 \
		ARC_REQUIRE_DUCKDB_ICEBERG=1 ARC_REQUIRE_POSTGRES=1 $(GO) test -race -count=1 -timeout 20m ./...

# A Docker engine for TestDockerCompose: with DOCKER=install (or CI=true)
# installed and started as root on Debian; otherwise only one already
# running is used, and the test skips and says how to run it.
engine:
	@DOCKER=$(DOCKER) deploy/engine.sh

# The two images, from the static binaries in bin/ (no registry needed).
images: build $(VERSITYGW)
	docker build -q --target arcstore -t arc-otel/arcstore:dev . >/dev/null
	docker build -q --target otelcol-arc -t arc-otel/otelcol-arc:dev . >/dev/null
	docker build -q --target versitygw -t arc-otel/versitygw:dev . >/dev/null

# The kill loop of TestChaosSidecarKills at full length (make test runs 3 kills).
CHAOS_KILLS ?= 12
chaos: tools build
	ARC_CHAOS_KILLS=$(CHAOS_KILLS) PATH="$(TOOLS):$$PATH" $(GO) test -count=1 -v -run TestChaos -timeout 30m ./internal/e2e/ | grep -E 'chaos:|kill|^(---|ok|FAIL)'

# Each fuzz target for FUZZTIME (the corpus under testdata/fuzz also runs in make test).
FUZZTIME ?= 10m
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzDecodeAndCheckBatch -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./storage/
	$(GO) test -run '^$$' -fuzz FuzzDecodeWALRecord -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./storage/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/arcmsgpack/
	$(GO) test -run '^$$' -fuzz FuzzDecode -fuzztime $(FUZZTIME) -fuzzminimizetime 5s ./internal/lineproto/

# Load runs (loadtest/README.md): the scenario against the nop-exporter
# ceiling and then against arcstore, on a fresh stack, with the loss check;
# reports land in loadtest/results/. LOADTEST_FLAGS adds arcload flags,
# e.g. LOADTEST_FLAGS='-rate 200000 -driver telemetrygen'.
LOADTEST_DURATION ?= 60s
LOADTEST_FLAGS ?=
loadtest-traces loadtest-logs loadtest-metrics loadtest-mixed: loadtest-%: tools build
	bin/arcload -scenario $* -duration $(LOADTEST_DURATION) $(LOADTEST_FLAGS)

# Arc MessagePack columnar batches straight to the sidecar's write API;
# LOADTEST_FLAGS='-target http://arc:8000' points the same run at Arc.
# arc-logs and arc-traces send every row new (8192 distinct batches);
# the -cycled ones the payloads up to 2026-11-27 (64 batches cycled).
loadtest-arc-metrics loadtest-arc-logs loadtest-arc-traces loadtest-arc-events loadtest-arc-mixed \
loadtest-arc-logs-cycled loadtest-arc-traces-cycled: loadtest-arc-%: tools build
	bin/arcload -scenario arc-$* -duration $(LOADTEST_DURATION) $(LOADTEST_FLAGS)

# DuckDB query latency on ~14 M spans before and after compaction.
querybench: tools build
	loadtest/querybench.sh

# OTLP request latency at 1, 4 and 16 closed-loop clients, each beside its
# nop ceiling, then at 80 % of the 4-client rate (loadtest/latency.sh).
loadtest-latency: tools build
	DURATION=$(LOADTEST_DURATION) ARCLOAD_FLAGS='$(LOADTEST_FLAGS)' loadtest/latency.sh

# The ClickHouse sink under load: Parquet + ClickHouse, then ClickHouse alone.
loadtest-clickhouse: tools build
	loadtest/clickhouse.sh

# Our stack beside the contrib clickhouseexporter into ClickHouse 26.9
# under the same OTLP load and client count, alternating ours, contrib,
# contrib, ours (loadtest/contrib.sh); CONTRIB_SCENARIO=logs or metrics.
CONTRIB_SCENARIO ?= traces
CONTRIB_WORKERS ?= 16
loadtest-contrib-clickhouse: tools build $(CONTRIB_COLLECTOR)
	ARC_CONTRIB_COLLECTOR=$(CURDIR)/$(CONTRIB_COLLECTOR) $(GO) test -count=1 -run '^TestContribConfig' ./loadtest/internal/stack/
	SCENARIO=$(CONTRIB_SCENARIO) DURATION=$(LOADTEST_DURATION) WORKERS=$(CONTRIB_WORKERS) \
		CONTRIB=$(CONTRIB_COLLECTOR) ARCLOAD_FLAGS='$(LOADTEST_FLAGS)' loadtest/contrib.sh

# The demo story of docs/QUERIES.md, through the collector, once.
loadtest-campaign: tools build
	bin/arcload -scenario campaign $(LOADTEST_FLAGS)

# Every Arc measurement at once against the sidecar's write API.
loadtest-arc: loadtest-arc-mixed

# The campaign story end to end into loadtest/results/demo, then how to
# ask docs/QUERIES.md's questions of it.
DEMO_DIR := loadtest/results/demo
demo: tools build
	rm -rf $(DEMO_DIR)
	bin/arcload -scenario campaign -out $(DEMO_DIR) | tail -8
	@echo
	@echo "The story is in $(DEMO_DIR)/arc/data. Ask it questions:"
	@echo "  cd $(DEMO_DIR)/arc && $(DUCKDB)"
	@echo "then paste the views block of docs/QUERIES.md and any query after it:"
	@grep -o -- '-- name: [a-z0-9-]*' docs/QUERIES.md | sed 's/-- name: /  /'

# The ceiling at full speed for 30 s, then our stack with the rate raised
# step by step until achievement < 95 %, durable-ack p99 > 50 ms or errors.
SWEEP_SCENARIO ?= traces
loadtest-sweep: tools build
	bin/arcload -scenario $(SWEEP_SCENARIO) -sweep -duration 30s $(LOADTEST_FLAGS)

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./internal/otlparrow/ ./internal/parquetfile/

lint:
	$(GO) vet ./...
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt: $$out"; exit 1; fi

clean:
	rm -rf bin _build
