# Every workflow of the project, by name. `make run` and `make test` install what is missing first.
SHELL := /bin/bash
SWIFT ?= swift
APT_PACKAGES := libmicrohttpd-dev libsqlite3-dev libpq-dev libbrotli-dev zlib1g-dev postgresql pkg-config python3 libcurl4-openssl-dev
## what the tests use besides: decoders for the compressed forms, the SVG 1.1 DTD and xmllint, openssl and curl for TLS
## gcc: the no-network shim the in-process tests run under (scripts/no-network.c); h2load (nghttp2-client): proxy-test's bursts of connections
TEST_PACKAGES := gcc sqlite3 brotli gzip libxml2-utils w3c-sgml-lib openssl curl nginx varnish varnish-modules squid apache2 haproxy prometheus-alertmanager nghttp2-client
PORT ?= 8080

.PHONY: deps test-deps build release run test test-client test-android lint format acceptance bench fuzz clean browser-test previews k8s-check docs-test link-check proxy-test abuse bench-readers bench-held signature-test

## deps: install the system libraries the build links (Debian/Ubuntu; uses sudo when not root)
deps:
	@missing=""; for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
		$$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

test-deps:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(APT_PACKAGES) $(TEST_PACKAGES)"

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release --product tabserver

## run: serve configs/ on port $(PORT) with the embedded SQLite store under data/
## (HOST=127.0.0.1 make run keeps it to this machine; the default, 0.0.0.0, is every interface, as a container needs)
HOST ?= 0.0.0.0
run: release
	@echo "make run: tabserver listens on $(HOST):$(PORT)$(if $(filter 0.0.0.0,$(HOST)), (every interface of this machine),): try curl http://127.0.0.1:$(PORT)/v1/accounts/jack/tabs"
	.build/release/tabserver serve --host $(HOST) --port $(PORT) --configs configs --store sqlite:data/tabs.sqlite

## test: every test (unit, store conformance on memory, SQLite and a throwaway PostgreSQL, live HTTP,
## kill -9, races, two replicas)
test: test-deps
	@mkdir -p .build && date +%s >.build/make-test-started
	$(SWIFT) build --build-tests
	# In-process targets with --parallel under a shim that refuses sockets; the socket targets (servers, PostgreSQL)
	# one test at a time in two streams. Which is which: SOCKET_TARGETS in scripts/swift-tests. It prints the count
	# and the ten slowest, printed again below once every other test has passed.
	REQUIRE_SVG_VALIDATION=1 SWIFT=$(SWIFT) SWIFT_TESTS_SUMMARY=.build/swift-tests-summary.txt scripts/swift-tests
	# Automatic rollback with Debian's real Alertmanager sending its webhook to a live server.
	scripts/alertmanager-test "$$($(SWIFT) build --show-bin-path)/tabserver"
	$(MAKE) --no-print-directory test-client
	$(MAKE) --no-print-directory test-android
	@echo; echo "make test: every test passed in $$(( $$(date +%s) - $$(cat .build/make-test-started) )) s (after the installs)."
	@echo "The server's Swift tests:"; cat .build/swift-tests-summary.txt

## test-client: the client package's own tests (Clients/TabClient, warnings as errors; its live test against the debug
## tabserver when one is built), and a throwaway app that depends on it alone, by path and by URL (scripts/client-app-test)
## The client's tests and both apps build in the server's own scratch directory (.build), with the same flags: SwiftPM
## reuses what the server's build compiled there (swift-crypto, BoringSSL, the client), so nothing is compiled twice in
## `make test` (the client's build there takes ~15 s after the server's; the server's next build only relinks).
CLIENT_SCRATCH := $(CURDIR)/.build
test-client:
	$(SWIFT) build --package-path Clients/TabClient --scratch-path $(CLIENT_SCRATCH) --build-tests \
		-Xswiftc -warnings-as-errors -Xswiftc -strict-concurrency=complete
	bin="$$($(SWIFT) build --show-bin-path 2>/dev/null)/tabserver"; \
	if [ -x "$$bin" ]; then export TABSERVER_BIN="$$bin"; else echo "test-client: no $$bin, the live test is skipped"; fi; \
	$(SWIFT) test --package-path Clients/TabClient --scratch-path $(CLIENT_SCRATCH) --skip-build
	CLIENT_APP_SCRATCH=$(CLIENT_SCRATCH) scripts/client-app-test

## test-android: the Java client (Clients/android) with Debian's JDK, JUnit 5 and org.json: builds the jar and POM, runs its
## tests and the conformance scenarios, and the live test against the debug tabserver when one is built
ANDROID_PACKAGES := openjdk-17-jdk-headless junit5 libandroid-json-java
test-android:
	@$(MAKE) --no-print-directory deps APT_PACKAGES="$(ANDROID_PACKAGES)"
	bin="$$($(SWIFT) build --show-bin-path 2>/dev/null)/tabserver"; \
	if [ -x "$$bin" ]; then export TABSERVER_BIN="$$bin"; else echo "test-android: no $$bin, the live test is skipped"; fi; \
	$(MAKE) --no-print-directory -C Clients/android test size

lint:
	$(SWIFT) format lint --strict --recursive Package.swift Sources Tests Fuzz Clients Plugins

format:
	$(SWIFT) format --in-place --recursive Package.swift Sources Tests Fuzz Clients Plugins

## acceptance: the black-box suite of ../shared/acceptance against a release build
acceptance: release
	TABSERVER_BIN=.build/release/tabserver python3 ../shared/acceptance/run.py

## bench: tabserver vs nginx serving the same bytes, with wrk (see bench/README.md)
bench: release
	bash bench/run.sh

## bench-held: HELD (default 10000) long-polls held from many loopback addresses: RSS each, wake and SIGTERM times
## (bench/held.sh; HELD_ARGS are serve flags, e.g. --max-header-bytes 4096; installs gcc when missing)
bench-held: release
	N=$${HELD:-10000} SERVER_ARGS="$${HELD_ARGS:-}" bash bench/held.sh

clean:
	rm -rf .build

## fuzz: every libFuzzer target for FUZZ_SECONDS (default 60) each (see Fuzz/README.md)
fuzz: deps
	FUZZ_SECONDS=$${FUZZ_SECONDS:-60} scripts/fuzz

## browser-test: the web console in headless Chromium against a live server (scripts/browser-test)
browser-test: build
	scripts/browser-test

## previews: draw docs/preview-*.svg again from configs/layouts
previews: build
	UPDATE_PREVIEWS=1 $(SWIFT) test --filter TabPreviewTests

## k8s-check: render every kustomization, validate strictly, checkov, Pod Security "restricted"
k8s-check:
	scripts/k8s-check

## docs-test: run the README's and docs/' sh blocks, verbatim, against a live server
docs-test: build
	scripts/docs-test

## link-check: every relative link of the Markdown files, and every docs/*.md the sources name, points at a file
link-check:
	scripts/link-check

## signature-test: every signed answer of a live server verified by openssl and Python's cryptography
signature-test: build
	TABSERVER_BIN="$$(swift build --show-bin-path)/tabserver" scripts/signature-test

## proxy-test: deploy/proxy's nginx, Varnish, Squid, Apache and HAProxy recipes in front of live servers (scripts/proxy-test)
proxy-test: test-deps build
	scripts/proxy-test

## abuse: every attack of docs/security.md against a release tabserver of its own (scripts/abuse)
abuse: deps
	scripts/abuse

## bench-readers: the readers' 1 MiB worst cases and the issue's 10k/20k/40k-key dictionaries (package-benchmark)
bench-readers:
	swift package --package-path Benchmarks benchmark --target ReaderBenchmarks
