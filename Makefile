# vwr — two-tier virtual waiting room. `make` lists the targets.
.DEFAULT_GOAL := help
SHELL := /bin/bash

GO        ?= go
PORT      ?= 8080
VENV      := .venv
PY        := python3
LAMBDAS   := $(notdir $(wildcard lambdas/*))
APT_PKGS  := redis-server redis-tools chromium fonts-nanum
export GOFLAGS ?= -mod=readonly

.PHONY: help run test testenv testenv-apt testenv-venv gotest gotest-race gotest-rest gotest-wait build lambdas validate lint bench bench-scale bench-draw clean e2e screenshots test-aws sam-build synth infra-test edge-test deploy deploy-preflight destroy testenv-localstack test-localstack

help: ## list targets
	@grep -hE '^[a-zA-Z0-9_-]+:.*?## ' $(MAKEFILE_LIST) | awk -F':.*?## ' '{printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}'

run: ## run the whole stack locally on embedded defaults (http://127.0.0.1:8080; `make run PORT=9090` for another port)
	$(GO) run ./cmd/vwr local -demo -addr 127.0.0.1:$(PORT)

# make test runs its phases in lanes side by side (scripts/test-lanes.sh):
# much of the suite waits (on intervals, emulators, browsers), so on two
# cores lanes overlap one phase's waits with another's work. The browser
# tests and the AWS suites, whose waits have deadlines, start once the go
# lane is done: the race detector's packages are the heaviest CPU, and the
# loadtests in gotest-rest assert that nothing fails before a fault and
# that admitting resumes at once after one, which a machine saturated by
# browsers and LocalStack broke (requests sent 9 s late); meanwhile the
# static checks and, in a lane of their own, the Tier 1 DynamoDB store's
# tests run, niced (they have no deadline to miss). Each lane's lines are prefixed with its name and kept in
# test-output/lanes/<lane>.log; any failure fails make test, and the summary
# names it. Each phase installs what it needs first (the installs take
# locks, so lanes never install the same thing at once); LocalStack's
# Python, built once per machine when there is none (minutes), is built
# first in the aws lane while the others test.
TEST_LANES := 'go: gotest-race gotest-rest' \
	'static: nice lint validate lambdas sam-build synth infra-test edge-test' \
	'moto: nice gotest-wait' \
	'e2e: @go:gotest-rest e2e' \
	'aws: testenv-localstack @go:gotest-rest test-localstack'

test: ## install test backends, then run every test (lanes side by side; test-output/lanes/)
	+@scripts/test-lanes.sh $(TEST_LANES)
	@echo "make test: all green"

# DynamoDB stays on moto under test-localstack, so inside make test the
# Tier 1 DynamoDB store's suite (the longest AWS suite, DynamoDB only) would
# run twice against the same emulator: gotest runs it, test-localstack skips it.
test: export VWR_AWS_SKIP := ./internal/tier1/dynamostore/

# The concurrency-heavy packages, which run under the race detector (so
# each test runs once): the Tier 2 queue (retire races, competing workers,
# two API servers on one Redis), the SQS publisher, the Tier 1 domain and
# Redis store (concurrent enters), the demo's seat holds.
RACE_PKGS := ./services/queue/... ./internal/notify/ ./internal/tier1/ ./internal/tier1/redisstore/ ./internal/demo/

# Long computations in RACE_PKGS with nothing left for the race detector to
# watch, two to three times the CPU under it (minutes of CPU on two cores):
# TestSelfHealMidSale and TestPeopleAheadFromMemoryStaysWithinBound drive
# their instances' handlers and passes from one goroutine (they run no
# background jobs); TestEstimateAheadIsExactFromCounters and
# TestPeopleAheadErrorBound are Tier 1's estimate arithmetic over simulated
# sales, in one goroutine; TestFreedSlotRefilledBesideManyListedEvents lists
# 20,000 events to count one pass's round trips (concurrent checks and
# passes over many events stay under -race in TestConcurrentChecksAndWorkers
# and TestIdleRememberedEventsCostNoReads). And cases that run under -race
# on redis-server and repeat on an emulator or the Cluster (the store's Go
# code is the same; miniredis's own concurrency stays under -race in the
# Tier 2 suite's racing joins): the 5,000-ticket scheduled sale on
# miniredis and on the Cluster (1,100 tickets on redis-server under -race),
# the Tier 2 suite's two long lines (relog, stale cleanup) and the
# active-events race on miniredis.
# gotest-race skips exactly these and gotest-rest runs exactly these,
# without -race: each test still runs once. A renamed test matches neither
# and so runs under -race.
RACE_SLOW_PKGS := ./services/queue/ ./services/queue/app/ ./services/queue/redisstore/ ./internal/tier1/ ./internal/tier1/redisstore/
RACE_SLOW      := ^TestSelfHealMidSale$$|^TestPeopleAheadFromMemoryStaysWithinBound$$|^TestFreedSlotRefilledBesideManyListedEvents$$|^TestEstimateAheadIsExactFromCounters$$|^TestPeopleAheadErrorBound$$|^TestConformance(Miniredis|RedisCluster)$$/^Sale$$/^scheduled_sale|^TestConformance$$/^miniredis$$/^(relog_queues_the_whole_served_record|stale_cleanup_sweeps_a_long_line$$)|^TestActiveEventsInvariantUnderConcurrency$$/^miniredis$$

# Packages whose tests wait on an emulator rather than compute (each Tier 1
# DynamoDB test's requests go to moto one at a time): more of their
# parallel tests at once than GOMAXPROCS (go test's default -parallel).
WAIT_PKGS     := ./internal/tier1/dynamostore/
WAIT_PARALLEL := 8

gotest: gotest-race gotest-rest gotest-wait ## run the Go tests: RACE_PKGS under -race (gotest-race), the rest without (gotest-rest, gotest-wait)

gotest-rest: testenv-apt testenv-venv
	@pkgs=$$($(GO) list ./... | grep -vxF -f <($(GO) list $(RACE_PKGS) $(WAIT_PKGS))) && \
	echo "$(GO) test -count=1 -timeout 20m <all but RACE_PKGS and WAIT_PKGS>" && \
	$(GO) test -count=1 -timeout 20m $$pkgs
	$(GO) test -count=1 -timeout 20m -run '$(RACE_SLOW)' $(RACE_SLOW_PKGS)

gotest-wait: testenv-apt testenv-venv
	$(GO) test -count=1 -timeout 20m -parallel $(WAIT_PARALLEL) $(WAIT_PKGS)

gotest-race: testenv-apt testenv-venv ## run the concurrency-heavy packages (RACE_PKGS) under the race detector
	$(GO) test -race -count=1 -timeout 20m -skip '$(RACE_SLOW)' $(RACE_PKGS)

testenv: testenv-apt testenv-venv ## install missing test backends (redis-server, chromium, .venv with moto/sam/cfn-lint, npm packages, LocalStack)

# One apt-get at a time on this machine (make test's lanes, and
# scripts/python312.sh's build dependencies, share the lock).
APT_LOCK := $(HOME)/.cache/vwr/apt.lock
export APT_LOCK

testenv-apt: ## apt-get install what the tests run (redis-server, chromium, fonts) when missing
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    mkdir -p "$$(dirname $(APT_LOCK))" && exec 9>"$(APT_LOCK)" && flock 9 && \
	    missing="" && for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	    if [ -n "$$missing" ]; then \
	      echo "testenv: apt-get install$$missing"; \
	      apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq$$missing >/dev/null; \
	    fi; \
	  else \
	    echo "testenv: missing$$missing; run: sudo apt-get update && sudo apt-get install -y$$missing" >&2; exit 1; \
	  fi; \
	fi

# .venv, once per requirements-dev.txt; the lock lets lanes that need it
# wait for the one creating it.
testenv-venv:
	@stamp=$(VENV)/.installed-$$(sha256sum requirements-dev.txt | cut -c1-12); \
	if [ ! -f $$stamp ]; then \
	  exec 9>"$(VENV).lock" && flock 9 && \
	  if [ ! -f $$stamp ]; then \
	    echo "testenv: creating $(VENV) from requirements-dev.txt"; \
	    $(PY) -m venv $(VENV) && $(VENV)/bin/pip install -q --disable-pip-version-check -r requirements-dev.txt && \
	    rm -f $(VENV)/.installed-* && touch $$stamp; \
	  fi; \
	fi

E2E_STAMP := e2e/node_modules/.installed

# npm ci only when node_modules is missing or the lockfile changed.
$(E2E_STAMP): e2e/package-lock.json
	@command -v npm >/dev/null || { echo "e2e: npm not found; install Node.js 20+ with npm" >&2; exit 1; }
	cd e2e && npm ci --no-audit --no-fund
	@touch $@

testenv: $(E2E_STAMP)

# docs' TestGateExamplesAgreeWithVWR runs the gate examples on e2e's jose.
gotest-rest: $(E2E_STAMP)

# The browser test files run E2E_JOBS at a time (each starts its own vwr
# local and Chromium; they mostly wait on pages' poll intervals: 167 CPU-s
# in 321 s with 3 at a time, 489 s with 2, at load 15–20 here), on one vwr
# binary built here instead of one per file. A test that fails is run again
# alone once: a pass then is reported FLAKY (test-output/e2e-flaky.txt and
# make test's summary), not hidden; see e2e/run.mjs.
E2E_JOBS ?= 3

e2e: testenv-apt $(E2E_STAMP) ## browser tests in Chromium (E2E_JOBS files at a time)
	$(GO) build -o bin/e2e/vwr ./cmd/vwr
	VWR_E2E_BIN=bin/e2e/vwr node e2e/run.mjs $(E2E_JOBS)

# The README's and docs/journey.md's pictures, as the browser tests took them
# (test-output/screenshots/<test's name>.png → docs/img/<doc's name>.png).
SHOTS := sale-1-prequeue-phone:prequeue-phone 1-waiting-room-phone:waiting-room-phone \
	2-queue-desktop:queue-desktop 4-held-desktop:seat-held-desktop 5-left-desktop:left-desktop \
	console-desktop:console-desktop console-phone:console-phone

screenshots: $(E2E_STAMP) ## run the journey, sale and console browser tests and copy their screenshots into docs/img
	node --test e2e/journey.test.js e2e/sale.test.js e2e/console.test.js
	@for s in $(SHOTS); do cp test-output/screenshots/$${s%%:*}.png docs/img/$${s##*:}.png && echo "docs/img/$${s##*:}.png"; done

# The CDK app (infra/, its own Go module, so jsii stays out of the root
# module's `go test ./...`) and its pinned aws-cdk CLI.
INFRA_STAMP := infra/node_modules/.installed
CDK         := cd infra && CDK_DISABLE_CLI_TELEMETRY=true ./node_modules/.bin/cdk --no-notices
# jsii (the CDK's Go bridge) prints a page-wide banner on every run under
# Node 20, which reached end of life; the app works the same. Node 22+ is
# recommended for deploying.
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20

$(INFRA_STAMP): infra/package-lock.json
	@command -v npm >/dev/null || { echo "infra: npm not found; install Node.js 20+ with npm" >&2; exit 1; }
	cd infra && npm ci --no-audit --no-fund
	@touch $@

testenv: $(INFRA_STAMP)

synth: $(INFRA_STAMP) testenv-venv lambdas ## cdk synth into infra/cdk.out (the app built once), then cfn-lint every template
	cd infra && $(GO) build -o ../bin/infra-app .
	$(CDK) synth --app ../bin/infra-app -o cdk.out --quiet
	@# W3005: CDK writes DependsOn next to a Ref it already depends on; harmless.
	$(VENV)/bin/cfn-lint --ignore-checks W3005 -- infra/cdk.out/*.template.json

infra-test: ## the CDK assertion and SAM/CDK parity tests (infra/)
	cd infra && $(GO) vet . && $(GO) test -count=1 .

edge-test: $(INFRA_STAMP) ## the CloudFront Functions: the Go-minted vectors, and runtime 2.0 features only (acorn)
	node --test infra/edge/

# make deploy (docs/deploy.md): the registry stack, the Tier 2 image built
# and pushed there (Docker; or IMAGE_PUSHED=1 when QUEUE_IMAGE_TAG was pushed
# elsewhere), every stack with that tag, then the edge keys from the Tier 1
# key secret. CloudFormation asks before widening IAM or security groups
# unless CI is set. Tags are immutable: a build of a dirty tree gets its own.
CDK_APPROVAL    := $(if $(CI),--require-approval never,)
QUEUE_IMAGE_TAG ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null)$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty-$$(date +%s))
IMAGE_PUSHED    ?=
VWR             ?= bin/vwr
DEPLOY_OUTPUTS  := infra/cdk-outputs.json
output = $$(node -p "require('./$(DEPLOY_OUTPUTS)')['$(1)']['$(2)']")

deploy: deploy-preflight lambdas build $(INFRA_STAMP) ## deploy every stack: registry, Tier 2 image (Docker), all stacks, edge keys (AWS credentials)
	$(CDK) deploy VwrRegistry $(CDK_APPROVAL) --outputs-file cdk-outputs.json
	@repo=$(call output,VwrRegistry,QueueRepositoryUri); tag='$(QUEUE_IMAGE_TAG)'; \
	if [ -n "$(IMAGE_PUSHED)" ]; then \
	  echo "deploy: using $$repo:$$tag, pushed already (IMAGE_PUSHED)"; \
	elif command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1; then \
	  region=$$(echo "$$repo" | cut -d. -f4); \
	  pw=$$(aws ecr get-login-password --region "$$region") && echo "$$pw" | docker login --username AWS --password-stdin "$${repo%%/*}" && \
	  if aws ecr describe-images --region "$$region" --repository-name "$${repo#*/}" --image-ids imageTag="$$tag" >/dev/null 2>&1; then \
	    echo "deploy: $$repo:$$tag is in the registry already"; \
	  else \
	    docker build --platform linux/arm64 -f services/queue/Dockerfile -t "$$repo:$$tag" . && docker push "$$repo:$$tag"; \
	  fi || exit 1; \
	else \
	  echo "deploy: Docker is not available here. Build and push the Tier 2 image from a machine that has it:" >&2; \
	  echo "  docker build --platform linux/arm64 -f services/queue/Dockerfile -t $$repo:$$tag . && docker push $$repo:$$tag" >&2; \
	  echo "then run: make deploy QUEUE_IMAGE_TAG=$$tag IMAGE_PUSHED=1" >&2; \
	  exit 1; \
	fi
	$(CDK) deploy --all $(CDK_APPROVAL) --parameters VwrTier2:QueueImageTag='$(QUEUE_IMAGE_TAG)' --outputs-file cdk-outputs.json
	$(VWR) admin edge-keys sync -secret $(call output,VwrTier1,Tier1KeysSecretArn) -store $(call output,VwrFrontDoor,EdgeKeysArn)
	@echo "deploy: done. Walk one visitor through it: $(VWR) smoke -url https://$(call output,VwrFrontDoor,DistributionDomain)"

deploy-preflight:
	@command -v node >/dev/null || { echo "deploy: node not found; install Node.js 22+ (docs/deploy.md)" >&2; exit 1; }
	@test -n "$(QUEUE_IMAGE_TAG)" || { echo "deploy: set QUEUE_IMAGE_TAG (no git checkout to name the image after)" >&2; exit 1; }

destroy: $(INFRA_STAMP) ## delete every stack (tables, bucket, repository and secrets are kept: docs/deploy.md, tear-down)
	$(CDK) destroy --all $(if $(CI),--force,)

build: ## build the vwr CLI and the Tier 2 queue binary into bin/
	$(GO) build -o bin/vwr ./cmd/vwr
	$(GO) build -o bin/queue ./services/queue/cmd/queue

# The one Lambda build: static linux/arm64, no RPC shim, stripped. `make
# lambdas`, `sam build` (build-<LogicalId> below) and the CDK app's code
# (bin/<fn>/bootstrap) all use it.
LAMBDA_BUILD = GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -tags lambda.norpc -trimpath -ldflags "-s -w"

lambdas: ## build bin/<fn>/bootstrap for every Lambda (linux/arm64)
	@for fn in $(LAMBDAS); do \
	  echo "lambdas: $$fn"; \
	  $(LAMBDA_BUILD) -o bin/$$fn/bootstrap ./lambdas/$$fn || exit 1; \
	done

# sam build (BuildMethod: makefile) runs `make build-<LogicalId>` here with
# ARTIFACTS_DIR set. LogicalId → lambdas/<dir>:
SAM_FUNCTIONS := AssignFunction:assign CheckFunction:check StatusFunction:status DrawFunction:draw \
	AdminFunction:admin AdvancerFunction:advancer AdmittedConsumerFunction:admitted-consumer
$(foreach f,$(SAM_FUNCTIONS),$(eval build-$(word 1,$(subst :, ,$(f))): ; $$(LAMBDA_BUILD) -o $$(ARTIFACTS_DIR)/bootstrap ./lambdas/$(word 2,$(subst :, ,$(f)))))

sam-build: testenv-venv ## sam build into .aws-sam/ (no Docker: the Makefile builds each function)
	AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0 $(VENV)/bin/sam build -t template.yaml

# sam validate --lint would run the same cfn-lint again (on the same
# template, from the same .venv): cfn-lint runs once.
validate: testenv-venv ## check template.yaml: the SAM transform (sam validate), then cfn-lint
	AWS_DEFAULT_REGION=us-east-1 SAM_CLI_TELEMETRY=0 $(VENV)/bin/sam validate -t template.yaml
	$(VENV)/bin/cfn-lint template.yaml

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './.venv/*')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# The suites that talk to AWS services (DynamoDB, SQS, Secrets Manager).
# `make test-aws` runs them against endpoints the tests did not start:
# AWS_ENDPOINT_URL for every service, AWS_ENDPOINT_URL_DYNAMODB (optional)
# for DynamoDB alone. `make test-localstack` starts LocalStack and moto for it.
AWS_PKGS  := ./internal/tier1/dynamostore/ ./internal/eventsettings/dynamostore/ ./internal/admitted/... ./internal/notify/ ./internal/dynamotable/ ./internal/testenv/ ./lambdas/admitted-consumer/ ./internal/tier1/tier1app/
AWS_TESTS := ./cmd/vwr/ -run '^(TestEdgeKeys|TestLocalPublishesToSQS)$$'

test-aws: ## run the AWS suites against AWS_ENDPOINT_URL (and AWS_ENDPOINT_URL_DYNAMODB for DynamoDB when set)
	@test -n "$(AWS_ENDPOINT_URL)" || { echo "test-aws: set AWS_ENDPOINT_URL, e.g. make test-aws AWS_ENDPOINT_URL=http://localhost:4566" >&2; exit 1; }
	AWS_ENDPOINT_URL=$(AWS_ENDPOINT_URL) AWS_ENDPOINT_URL_DYNAMODB=$(AWS_ENDPOINT_URL_DYNAMODB) AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
	  $(GO) test -count=1 -timeout 20m $(filter-out $(VWR_AWS_SKIP),$(AWS_PKGS))
	AWS_ENDPOINT_URL=$(AWS_ENDPOINT_URL) AWS_ENDPOINT_URL_DYNAMODB=$(AWS_ENDPOINT_URL_DYNAMODB) AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
	  $(GO) test -count=1 -timeout 10m $(AWS_TESTS)

# LocalStack on the host, without Docker, in its own venv on Python >= 3.12
# (scripts/python312.sh finds one or builds it from Debian's sources). The
# venv is kept per machine, named after requirements-localstack.txt's hash,
# so a fresh clone reuses it; a lock keeps two checkouts' testenv from
# building it over each other.
LS_VENV ?= $(HOME)/.cache/vwr/localstack-$(shell sha256sum requirements-localstack.txt | cut -c1-12)
export LS_VENV

testenv-localstack: ## install LocalStack (requirements-localstack.txt) into its venv on Python >= 3.12
	@mkdir -p "$$(dirname $(LS_VENV))" && exec 9>"$(LS_VENV).lock" && flock 9 && \
	if [ ! -f $(LS_VENV)/.installed ]; then \
	  py=$$(scripts/python312.sh) && echo "testenv: creating $(LS_VENV) with $$py from requirements-localstack.txt" && \
	  rm -rf $(LS_VENV) && $$py -m venv $(LS_VENV) && \
	  $(LS_VENV)/bin/pip install -q --disable-pip-version-check --no-deps -r requirements-localstack.txt && \
	  touch $(LS_VENV)/.installed; \
	fi

testenv: testenv-localstack

test-localstack: testenv-apt testenv-localstack testenv-venv ## the AWS suites against LocalStack (SQS, Secrets Manager) and moto (DynamoDB), both started and stopped here
	scripts/test-localstack.sh

# make bench: Go benchmarks of the check path and a CPU profile of it, then
# bench.BenchmarkSuite (floor vs bin/queue A/B, redis-benchmark, Redis bytes
# per waiting user, Tier 1 capacity on moto, a 10,000-visitor loadtest and a
# 100,000-visitor sale, the recovery rehearsals, a scheduled sale's close and
# draw at 1 M and 10 M tickets), which writes bench/results.json and
# BENCHMARKS.md's tables. ~40 minutes on 2 cores; BENCH_FLAGS='-bench.only
# estimates' measures just the two wait-estimate rehearsals.
bench: testenv ## measure everything in BENCHMARKS.md (writes bench/results.json, BENCHMARKS.md, bench/loadtest*/)
	$(GO) test -run '^$$' -bench 'Check' -benchmem -benchtime 20000x ./bench/ | tee bench/gobench.txt
	$(GO) test -run '^$$' -bench 'CheckHTTP' -benchtime 20000x -cpuprofile bench/cpu.out -o bench/bench.test ./bench/ >/dev/null
	$(GO) tool pprof -top -nodecount 10 bench/bench.test bench/cpu.out > bench/pprof-top.txt
	$(GO) test -run '^$$' -bench '^BenchmarkSuite$$' -benchtime 1x -timeout 120m -v ./bench/ $(BENCH_FLAGS)
	@rm -f bench/bench.test bench/cpu.out

bench-scale: testenv ## measure only what a production poll costs Redis (BenchmarkTier2Scale) into bench/results.json and BENCHMARKS.md
	$(GO) test -run '^$$' -bench '^BenchmarkTier2Scale$$' -benchtime 1x -timeout 20m -v ./bench/ $(BENCH_FLAGS)

bench-draw: testenv ## measure only the draw at 1 M and 10 M tickets (peak memory, time) into bench/results.json and BENCHMARKS.md
	$(GO) test -run '^$$' -bench '^BenchmarkDrawScale$$' -benchtime 1x -timeout 60m -v ./bench/ $(BENCH_FLAGS)

.PHONY: loadtest
LOADTEST_FLAGS ?= -visitors 10000 -arrival burst -rate 500 -threshold 1000 -dwell 5s
loadtest: ## rehearse a sale in-process (LOADTEST_FLAGS='-visitors … -fault redis-flush@20s'); output in loadtest-out/
	$(GO) run ./cmd/vwr loadtest $(LOADTEST_FLAGS) -out loadtest-out

clean: ## remove build output
	rm -rf bin/ test-output/ .aws-sam/ infra/cdk.out/
