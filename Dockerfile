# TabServer: build with the Swift toolchain, run on Debian slim with a statically linked Swift runtime.
#   docker build -t tabserver:0.1.0 --build-arg VERSION=0.1.0 --build-arg REVISION="$(git rev-parse HEAD)" .
#   docker run -p 8080:8080 -v tabs:/data tabserver:0.1.0
# Runs as any UID in group 0 (OpenShift, `--user 12345`) and with a read-only root file system: /data is the
# only place it writes, and it belongs to group 0 with the owner's rights.
FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev libpq-dev libbrotli-dev zlib1g-dev libcurl4-openssl-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package.resolved stays out of the image (.dockerignore) as it stays out of git: the versions Package.swift
# names are resolved at build time.
COPY Package.swift ./
COPY Sources ./Sources
# The build-tool plugin that compiles the console's files into the binary, and its tool.
COPY Plugins ./Plugins
# Package.swift names the test targets: SwiftPM needs their folders even to build the product alone; and it
# resolves the client package (a path dependency of tabs-watch and the tests) before building anything.
COPY Tests ./Tests
COPY Clients ./Clients
# The binary, stripped of its symbol tables (the console's files are inside it), and any resource bundle SwiftPM
# made next to it (*.resources: Bundle.module finds them beside the executable; no target declares one today).
RUN swift build -c release --product tabserver --static-swift-stdlib \
    && bin="$(swift build -c release --show-bin-path)" \
    && mkdir -p /out/bin \
    && install -m 0755 "$bin/tabserver" /out/bin/tabserver \
    && strip /out/bin/tabserver \
    && find "$bin" -maxdepth 1 -name '*.resources' -exec cp -R {} /out/bin/ \;

FROM debian:bookworm-slim
ARG VERSION=0.1.0
ARG REVISION=unknown
# The repository the image is built from; a release build passes its URL.
ARG SOURCE=unknown
LABEL org.opencontainers.image.title="tabserver" \
      org.opencontainers.image.description="Serves tab-bar layouts to mobile apps, compiled from property lists or JSON" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}"
# libmicrohttpd12 serves HTTP; libsqlite3-0 and libpq5 are the two store backends' client libraries; libbrotli1
# compresses; libcurl4 sends webhook deliveries; ca-certificates lets PostgreSQL connections verify the server
# (sslmode=verify-full) and HTTPS webhook deliveries verify their receivers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 libpq5 libbrotli1 libcurl4 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --gid 0 --home-dir /data --shell /usr/sbin/nologin tabserver \
    && mkdir -p /data \
    && chown 10001:0 /data \
    && chmod 0775 /data
COPY --from=build /out/bin/ /usr/local/bin/
# The sample configs; mount your own over /etc/tabserver/configs.
COPY configs /etc/tabserver/configs
ENV TABSERVER_STORE=sqlite:/data/tabs.sqlite \
    TABSERVER_CONFIGS=/etc/tabserver/configs \
    TABSERVER_PORT=8080
USER 10001:0
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# No curl in the image: the binary asks its own /healthz (on TABSERVER_PORT).
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=3 CMD ["/usr/local/bin/tabserver", "healthcheck"]
# tabserver handles SIGTERM itself (graceful stop, exit 0), also as PID 1.
ENTRYPOINT ["/usr/local/bin/tabserver"]
CMD ["serve"]
