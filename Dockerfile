# TabServer: build with the Swift toolchain, run on Debian slim with a statically linked Swift runtime.
#   docker build -t tabserver .
#   docker run -p 8080:8080 -v tabs:/data tabserver
FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd-dev libsqlite3-dev libpq-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
COPY Sources ./Sources
# Package.swift names the test targets: SwiftPM needs their folders even to build the product alone.
COPY Tests ./Tests
RUN swift build -c release --product tabserver --static-swift-stdlib \
    && install -m 0755 "$(swift build -c release --show-bin-path)/tabserver" /usr/local/bin/tabserver

FROM debian:bookworm-slim
# libmicrohttpd12 serves HTTP; libsqlite3-0 and libpq5 are the two store backends' client libraries.
RUN apt-get update \
    && apt-get install -y --no-install-recommends libmicrohttpd12 libsqlite3-0 libpq5 \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin tabserver \
    && mkdir -p /data \
    && chown tabserver /data
COPY --from=build /usr/local/bin/tabserver /usr/local/bin/tabserver
# The sample configs; mount your own over /etc/tabserver/configs.
COPY configs /etc/tabserver/configs
ENV TABSERVER_STORE=sqlite:/data/tabs.sqlite \
    TABSERVER_CONFIGS=/etc/tabserver/configs \
    TABSERVER_PORT=8080
USER 10001
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8080
# tabserver handles SIGTERM itself (graceful stop, exit 0), also as PID 1.
ENTRYPOINT ["/usr/local/bin/tabserver"]
CMD ["serve"]
