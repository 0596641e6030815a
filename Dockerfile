# Images from binaries built on the host (`make build`): no registry needed.
# Running as non-root with a writable volume is part of issue 7.
#   docker build --target arcstore -t arc-otel/arcstore .
#   docker build --target otelcol-arc -t arc-otel/otelcol-arc .
FROM scratch AS arcstore
COPY bin/arcstore /arcstore
VOLUME /data
EXPOSE 8815 8000
ENTRYPOINT ["/arcstore", "-data-dir", "/data", "-grpc-addr", "0.0.0.0:8815", "-http-addr", "0.0.0.0:8000"]

FROM scratch AS otelcol-arc
COPY bin/otelcol-arc /otelcol-arc
COPY otelcol-config.yaml /etc/otelcol-arc/config.yaml
EXPOSE 4317 4318 13133
ENTRYPOINT ["/otelcol-arc", "--config", "/etc/otelcol-arc/config.yaml"]
