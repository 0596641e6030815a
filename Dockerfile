# Images from the static binaries `make build` puts in bin/: no registry is
# needed, so they build on machines without one (`make images`).
#   docker build --target arcstore -t arc-otel/arcstore:dev .
#   docker build --target otelcol-arc -t arc-otel/otelcol-arc:dev .
#   docker build --target versitygw -t arc-otel/versitygw:dev .   (the s3 profile)
# Both run as an unprivileged user; health checks use bin/healthcheck, as
# a scratch image has no shell.

FROM scratch AS arcstore
COPY bin/arcstore /arcstore
COPY bin/healthcheck /healthcheck
# The data directory belongs to the runtime user; a named volume mounted
# there takes this ownership on first use.
COPY --chown=10001:10001 deploy/empty/ /data/
USER 10001:10001
VOLUME /data
EXPOSE 8815 8000
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s CMD ["/healthcheck", "http://127.0.0.1:8000/ready"]
ENTRYPOINT ["/arcstore", "-data-dir", "/data", "-grpc-addr", "0.0.0.0:8815", "-http-addr", "0.0.0.0:8000"]

FROM scratch AS otelcol-arc
COPY bin/otelcol-arc /otelcol-arc
COPY bin/healthcheck /healthcheck
COPY deploy/otelcol-compose.yaml /etc/otelcol-arc/config.yaml
# Less GC CPU for about 50 MiB more memory: see COLLECTOR_GOGC in the Makefile.
ENV GOGC=400
USER 10001:10001
EXPOSE 4317 4318 13133 8888
HEALTHCHECK --interval=10s --timeout=5s --start-period=30s CMD ["/healthcheck", "http://127.0.0.1:13133/"]
ENTRYPOINT ["/otelcol-arc", "--config", "/etc/otelcol-arc/config.yaml"]

# Versity's S3 gateway (make tools builds it static), for the compose
# file's s3 profile: a bucket `arc` (a folder of its posix backend) on a
# volume.
FROM scratch AS versitygw
COPY .tools/versitygw /versitygw
COPY --chown=10001:10001 deploy/empty/ /s3/arc/
USER 10001:10001
VOLUME /s3
EXPOSE 7070
ENTRYPOINT ["/versitygw"]
