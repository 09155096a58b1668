package bench

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Results is bench/results.json: everything `make bench` measured in one run.
type Results struct {
	MeasuredAt string   `json:"measuredAt"`
	Machine    Machine  `json:"machine"`
	Versions   Versions `json:"versions"`
	Commands   []string `json:"commands"`

	// Per scenario (joins, polls, direct), the median of the rounds.
	CheckServiceRps map[string]float64 `json:"checkServiceRps"`
	CheckFloorRps   map[string]float64 `json:"checkFloorRps"`
	CheckRawRps     map[string]float64 `json:"checkRawRps"`
	// ServiceOverFloor is the median of each round's service/floor ratio;
	// ServiceOverRaw is the median service rate over redis-benchmark's.
	ServiceOverFloor         map[string]float64 `json:"serviceOverFloor"`
	ServiceOverRaw           map[string]float64 `json:"serviceOverRaw"`
	ServiceCPUMicrosPerCheck map[string]float64 `json:"serviceCpuMicrosPerCheck"`
	FloorCPUMicrosPerCheck   map[string]float64 `json:"floorCpuMicrosPerCheck"`
	Rounds                   map[string][]Round `json:"rounds"`
	LoadGenerator            string             `json:"loadGenerator"`

	RedisBytesPerWaitingUser float64 `json:"redisBytesPerWaitingUser"`
	RedisBytesUsers          int     `json:"redisBytesUsers"`

	SingleEventCeiling Ceiling `json:"singleEventCeiling"`

	GoBenchmarks []GoBench `json:"goBenchmarks"`
	PprofTop     []string  `json:"pprofTop"`

	Tier1Capacity []Tier1Capacity `json:"tier1Capacity"`
	Loadtest      LoadtestSummary `json:"loadtest"`
	// SaleRehearsal is the 100,000-visitor rehearsal with a sale's arrival
	// curve (`-bench.only estimates` measures it and Loadtest alone).
	SaleRehearsal *LoadtestSummary `json:"saleRehearsal,omitempty"`
	// Recovery are rehearsals that lose Tier 2's Redis mid-sale under the
	// default settings (`-bench.only recovery` measures them alone).
	Recovery []RecoveryRun `json:"recovery"`

	// DrawScale is a scheduled sale's close and draw at a million and ten
	// million tickets (BenchmarkDrawScale, also `make bench-draw` alone,
	// which keeps the rest of this file).
	DrawScale DrawScale `json:"drawScale"`

	// Tier2Scale is what Tier 2 costs its Redis per production poll, on a
	// Cluster and while idle (BenchmarkTier2Scale), before and after the
	// scale-out work, side by side.
	Tier2Scale Tier2ScaleRuns `json:"tier2Scale"`

	// Tier2Device is one event's queued polls across the cores of one
	// machine: 1 and several bin/queue processes, answers from memory off
	// and on (BenchmarkTier2Device, scripts/device-tier2.sh).
	Tier2Device *Tier2Device `json:"tier2Device,omitempty"`
}

// Tier2Device is one BenchmarkTier2Device run, with its own provenance.
type Tier2Device struct {
	MeasuredAt      string      `json:"measuredAt"`
	Machine         Machine     `json:"machine"`
	Commit          string      `json:"commit"`
	Redis           string      `json:"redis"`
	Command         string      `json:"command"`
	LineSize        int         `json:"lineSize"`
	DurationSeconds float64     `json:"durationSeconds"`
	Runs            []DeviceRun `json:"runs"`
}

// DeviceRun is one load run against one fleet of bin/queue processes.
type DeviceRun struct {
	Round          int     `json:"round"`
	Instances      int     `json:"instances"`
	FromMemory     bool    `json:"fromMemory"` // false: QUEUE_POLLS_FROM_STORE=true
	Connections    int     `json:"connections"`
	Polls          int64   `json:"polls"`
	Seconds        float64 `json:"seconds"`
	PollsPerSecond float64 `json:"pollsPerSecond"`
	// QueuedShare and FromMemoryShare are the answers "queued" and those
	// with "peopleAheadExact": false (given from memory).
	QueuedShare     float64 `json:"queuedShare"`
	FromMemoryShare float64 `json:"fromMemoryShare"`
	// RedisMainThreadCPU is the queue Redis's main-thread CPU (INFO cpu)
	// as a share of one core; RedisMainThreadMicrosPerPoll the same per
	// poll; RedisCommandsPerPoll the commands it executed per poll (INFO
	// commandstats: a script's inner commands count too, INFO's own not).
	RedisMainThreadCPU           float64 `json:"redisMainThreadCpu"`
	RedisMainThreadMicrosPerPoll float64 `json:"redisMainThreadMicrosPerPoll"`
	RedisCommandsPerPoll         float64 `json:"redisCommandsPerPoll"`
	// RedisMainThreadCPUProc is the same thread's CPU read from
	// /proc/PID/task/PID/stat (10 ms ticks): a check on INFO cpu.
	RedisMainThreadCPUProc float64 `json:"redisMainThreadCpuProc"`
	// QueueCPUCores is the bin/queue processes' CPU (/proc/PID/stat) in
	// cores, LoadGeneratorCPUCores the benchmark process's (getrusage),
	// MachineBusyCores the whole machine's (/proc/stat; 0 if unreadable).
	QueueCPUCores         float64 `json:"queueCpuCores"`
	QueueCPUMicrosPerPoll float64 `json:"queueCpuMicrosPerPoll"`
	LoadGeneratorCPUCores float64 `json:"loadGeneratorCpuCores"`
	MachineBusyCores      float64 `json:"machineBusyCores,omitempty"`
	P50Ms                 float64 `json:"p50Ms"`
	P99Ms                 float64 `json:"p99Ms"`
}

// Tier2ScaleRuns holds the measurement of the path before the scale-out
// work (kept as measured) and of today's path.
type Tier2ScaleRuns struct {
	Before *Tier2Scale `json:"before,omitempty"`
	After  *Tier2Scale `json:"after,omitempty"`
	// Device is today's path again on the lent 16-core device, a quiet
	// machine (scripts/device-tier2.sh, -bench.device).
	Device *Tier2Scale `json:"device,omitempty"`
}

// Tier2Scale is one BenchmarkTier2Scale run, with its own provenance.
type Tier2Scale struct {
	MeasuredAt      string  `json:"measuredAt"`
	Machine         Machine `json:"machine"`
	Commit          string  `json:"commit"`
	Instances       int     `json:"instances"`
	Connections     int     `json:"connections"`
	DurationSeconds float64 `json:"durationSeconds"`
	// Scenarios are joins, polls and direct (as in the A/B table), each
	// request with a Tier 1 pass on a configured event.
	Scenarios map[string]ScaleScenario `json:"scenarios"`
	// ModelledSingleEventCeiling is 1 s ÷ polls' redisMicrosPerCheck: the
	// polls/s one event's Redis node could answer if it did nothing else.
	ModelledSingleEventCeiling float64 `json:"modelledSingleEventCeiling"`
	// PollsFromStore is the polls scenario run just before, on the same
	// fleet, with every poll the store's step (Service.AnswerFromMemory
	// off): the path before answers from memory, measured at the same load.
	PollsFromStore *ScaleScenario `json:"pollsFromStore,omitempty"`
	Cluster        ClusterPoll    `json:"cluster"`
	Idle           IdleLoad       `json:"idle"`
	// PprofTop is `go tool pprof -top` of the benchmark process (the
	// instances and the load generator) while polls ran.
	PprofTop []string `json:"pprofTop,omitempty"`
}

// ScaleScenario is one scenario's cost to the queue's Redis.
type ScaleScenario struct {
	Checks          int64   `json:"checks"`
	ChecksPerSecond float64 `json:"checksPerSecond"`
	// RedisMicrosPerCheck is INFO commandstats' time of the commands the
	// instances sent (a script's time includes what it runs), per check;
	// RedisMainThreadMicrosPerCheck the main thread's CPU time (INFO cpu),
	// which adds reading, parsing and replying.
	RedisMicrosPerCheck           float64 `json:"redisMicrosPerCheck"`
	RedisMainThreadMicrosPerCheck float64 `json:"redisMainThreadMicrosPerCheck"`
	// RedisCommandsPerCheck and RoundTripsPerCheck count what the
	// instances sent (a go-redis hook), their workers included.
	RedisCommandsPerCheck float64 `json:"redisCommandsPerCheck"`
	RoundTripsPerCheck    float64 `json:"roundTripsPerCheck"`
	// FromMemoryShare is the share of answers an instance gave from its
	// memory of the line ("peopleAheadExact": false) without a store step.
	FromMemoryShare float64 `json:"fromMemoryShare,omitempty"`
}

// ClusterPoll is polls of many events through one instance on a 3-node
// Redis Cluster.
type ClusterPoll struct {
	Nodes  int `json:"nodes"`
	Events int `json:"events"`
	Checks int `json:"checks"`
	// NodesPerCheck is the mean number of nodes one check's commands went to.
	NodesPerCheck float64 `json:"nodesPerCheck"`
	// EventsOnTwoNodes counts the events whose checks touched more than one node.
	EventsOnTwoNodes      int     `json:"eventsOnTwoNodes"`
	RedisCommandsPerCheck float64 `json:"redisCommandsPerCheck"`
	RoundTripsPerCheck    float64 `json:"roundTripsPerCheck"`
}

// IdleLoad is what a fleet sends its Redis while many events hold
// visitors and nobody waits.
type IdleLoad struct {
	Events              int     `json:"events"`
	Instances           int     `json:"instances"`
	Seconds             float64 `json:"seconds"`
	CommandsPerSecond   float64 `json:"idleCommandsPerSecond"`
	RoundTripsPerSecond float64 `json:"roundTripsPerSecond"`
	// CommandsPerPass is what one admission pass sends, counted once the
	// jobs stopped; ModelledCommandsPerSecond is that times the passes per
	// second the fleet makes at the default interval (PassesPerInterval per
	// interval: one per instance before the passes' lease, one per fleet
	// since): what the fleet sends while idle where the machine keeps up.
	CommandsPerPass           float64 `json:"commandsPerPass,omitempty"`
	ModelledCommandsPerSecond float64 `json:"modelledCommandsPerSecond,omitempty"`
	PassesPerInterval         int     `json:"passesPerInterval,omitempty"`
}

// RecoveryRun is one rehearsal with a loss of Tier 2's Redis, measured
// with every Tier 2 default. It carries its own provenance, since it may
// be measured apart from the rest of the suite.
type RecoveryRun struct {
	Command     string  `json:"command"`
	Fault       string  `json:"fault"`
	MeasuredAt  string  `json:"measuredAt"`
	Commit      string  `json:"commit"`
	LoadAverage float64 `json:"loadAverage"`
	// WindowSeconds is the recovery window the defaults give.
	WindowSeconds   float64  `json:"windowSeconds"`
	RecoverySeconds *float64 `json:"recoverySeconds"`
	Visitors        int64    `json:"visitors"`
	LostVisitors    int64    `json:"lostVisitors"`
	InversionsTier2 int64    `json:"inversionsTier2"`
	OverAdmissions  int64    `json:"overAdmissions"`
	AdmittedTwice   int64    `json:"admittedTwice"`
	Reentered       int64    `json:"reentered"`
	ReentryRefused  int64    `json:"reentryRefused"`
	WaitErrorMedian float64  `json:"waitErrorMedian"`
}

// DrawScale is BenchmarkDrawScale's run: its own time, machine and commit,
// since `make bench-draw` measures it apart from the rest.
type DrawScale struct {
	MeasuredAt string  `json:"measuredAt"`
	Machine    Machine `json:"machine"`
	Commit     string  `json:"commit"`
	// GoMemLimitMiB and GoMaxProcs are what the measured process ran with:
	// the GOMEMLIMIT a 1,024 MB Lambda sets itself (tier1app), and one
	// processor (a 1,024 MB Lambda gets a little over half a vCPU).
	GoMemLimitMiB float64        `json:"goMemLimitMiB"`
	GoMaxProcs    int            `json:"goMaxProcs"`
	Command       string         `json:"command"`
	Runs          []DrawScaleRun `json:"runs"`
}

// DrawScaleRun is one sale's close and draw.
type DrawScaleRun struct {
	Tickets      int64   `json:"tickets"`
	CloseSeconds float64 `json:"closeSeconds"`
	DrawSeconds  float64 `json:"drawSeconds"`
	// PeakRSSMiB is the process's maximum resident set (getrusage), the
	// figure a Lambda's memory limit applies to; LiveHeapPeakMiB the
	// largest live heap a garbage collection found (what the draw needs;
	// the collector lets garbage grow towards GOMEMLIMIT on top of it).
	PeakRSSMiB      float64 `json:"peakRssMiB"`
	LiveHeapPeakMiB float64 `json:"liveHeapPeakMiB"`
	// CPUSeconds is the process's user + system time for the close and the
	// draw together (getrusage): less sensitive to other work on the
	// machine than the wall-clock seconds.
	CPUSeconds float64 `json:"cpuSeconds"`
}

// Machine is where the figures were measured.
type Machine struct {
	Cores     int     `json:"cores"`
	MemoryGiB float64 `json:"memoryGiB"`
	CPU       string  `json:"cpu"`
	Kernel    string  `json:"kernel"`
	// LoadAverage is /proc/loadavg's 1-minute figure when the run started:
	// above 0.5 per core, other work shared the machine.
	LoadAverage float64 `json:"loadAverage"`
}

// Versions of what ran.
type Versions struct {
	Go     string `json:"go"`
	Redis  string `json:"redis"`
	Commit string `json:"commit"`
}

// Round is one A/B pair: the service, then the floor, same load.
type Round struct {
	ServiceRps       float64 `json:"serviceRps"`
	FloorRps         float64 `json:"floorRps"`
	ServiceCPUMicros float64 `json:"serviceCpuMicros"`
	FloorCPUMicros   float64 `json:"floorCpuMicros"`
}

// Ceiling is one event's check rate on one Redis node (every key of an
// event shares a Cluster slot), and what Tier 1's metering sends at it.
type Ceiling struct {
	ChecksPerSecond float64 `json:"checksPerSecond"` // redis-benchmark, check.lua joins, one node
	// Tier1DefaultBatch and Tier1DefaultTickSeconds are Tier 1's defaults:
	// at most Batch/Tick new visitors per second reach Tier 2.
	Tier1DefaultBatch       int     `json:"tier1DefaultBatch"`
	Tier1DefaultTickSeconds float64 `json:"tier1DefaultTickSeconds"`
	// Note is the paragraph BENCHMARKS.md prints, its figures derived from
	// the above, queue.NextPoll and the measured ceiling.
	Note string `json:"note"`
}

// GoBench is one line of `go test -bench` output.
type GoBench struct {
	Name        string  `json:"name"`
	NsPerOp     float64 `json:"nsPerOp"`
	BytesPerOp  float64 `json:"bytesPerOp"`
	AllocsPerOp float64 `json:"allocsPerOp"`
}

// Tier1Capacity is one `vwr loadtest` with Tier 1 on DynamoDB (moto).
type Tier1Capacity struct {
	Shards                     int     `json:"shards"`
	Visitors                   int     `json:"visitors"`
	DynamoWritesPerVisitor     float64 `json:"dynamoWritesPerVisitor"`
	DynamoReadsPerVisitor      float64 `json:"dynamoReadsPerVisitor"`
	HottestPartitionWriteShare float64 `json:"hottestPartitionWriteShare"`
	HottestItemWriteShare      float64 `json:"hottestItemWriteShare"`
	// WritesPerSecondAtLimit is the figure, 1,000 ÷ the hottest
	// partition's share: all the event's writes/s when that partition
	// reaches DynamoDB's 1,000 writes/s. ImpliedEnterCapacity divides it by
	// writes per enter.
	WritesPerSecondAtLimit float64 `json:"writesPerSecondAtLimit"`
	ImpliedEnterCapacity   float64 `json:"impliedEnterCapacity"`
}

// LoadtestSummary is a rehearsal's headline figures. The wait-estimate
// errors are |estimate − actual| ÷ actual (docs/loadtest.md): the first
// estimate a visitor saw at each tier, and the later ones against the wait
// that remained.
type LoadtestSummary struct {
	Command string `json:"command"`
	// When, where and on what load it ran, if apart from the rest of the
	// results (`-bench.only estimates`).
	MeasuredAt                string  `json:"measuredAt,omitempty"`
	Commit                    string  `json:"commit,omitempty"`
	LoadAverage               float64 `json:"loadAverage,omitempty"`
	Arrival                   string  `json:"arrival,omitempty"`
	RatePerSecond             float64 `json:"ratePerSecond,omitempty"`
	Plots                     string  `json:"plots,omitempty"` // the folder of its plots
	Visitors                  int64   `json:"visitors"`
	Admitted                  int64   `json:"admitted"`
	LostVisitors              int64   `json:"lostVisitors"`
	InversionsTier1           int64   `json:"inversionsTier1"`
	InversionsTier2           int64   `json:"inversionsTier2"`
	MaxActive                 int64   `json:"maxActive"`
	Threshold                 int64   `json:"threshold"`
	OverAdmissions            int64   `json:"overAdmissions"`
	WaitErrorMedian           float64 `json:"waitErrorMedian"` // Tier 2, first estimate
	WaitErrorP90              float64 `json:"waitErrorP90"`
	WaitErrorLaterMedian      float64 `json:"waitErrorLaterMedian"` // Tier 2, later estimates
	WaitErrorLaterP90         float64 `json:"waitErrorLaterP90"`
	WaitErrorTier1Median      float64 `json:"waitErrorTier1Median"` // Tier 1, first estimate
	WaitErrorTier1P90         float64 `json:"waitErrorTier1P90"`
	WaitErrorTier1LaterMedian float64 `json:"waitErrorTier1LaterMedian"` // Tier 1, the page's later estimates
	WaitErrorTier1LaterP90    float64 `json:"waitErrorTier1LaterP90"`
	// PeopleAheadWithinBound is the share of the people-ahead counts the
	// Tier 1 pages showed within 2 % of the line or 16 people;
	// PeopleAheadP90OfLine the p90 of their error as a share of the line.
	PeopleAheadWithinBound float64 `json:"peopleAheadWithinBound"`
	PeopleAheadP90OfLine   float64 `json:"peopleAheadP90OfLine"`
	// StepLateMsP99 is how late the tool sent requests (p99): the tool or
	// the machine was saturated when it is large.
	StepLateMsP99           float64  `json:"stepLateMsP99"`
	RequestsPerSecond       float64  `json:"requestsPerSecond"`
	AdmissionsPerSecond     float64  `json:"admissionsPerSecond"`
	DurationSeconds         float64  `json:"durationSeconds"`
	RedisCommandsPerRequest float64  `json:"redisCommandsPerRequest"`
	RedisBytesPerWaiter     *float64 `json:"redisBytesPerWaiter"`
	Tier2CheckP99Ms         float64  `json:"tier2CheckP99Ms"`
}

// thousands writes a whole number with a comma every three digits.
func thousands(x float64) string {
	d := strconv.FormatInt(int64(x+0.5), 10)
	for i := len(d) - 3; i > 0; i -= 3 {
		d = d[:i] + "," + d[i:]
	}
	return d
}

func orText(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// rate is "at 500/s", or "" when unknown.
func rate(r float64) string {
	if r <= 0 {
		return ""
	}
	return fmt.Sprintf("at %s/s", thousands(r))
}

// Scenarios in the order the table shows them.
var Scenarios = []string{"joins", "polls", "direct"}

// Markers around the generated part of BENCHMARKS.md.
const (
	BeginMarker = "<!-- BEGIN GENERATED FROM bench/results.json (go test ./bench -run TestBenchmarksMD -update) -->"
	EndMarker   = "<!-- END GENERATED -->"
)

// Render is the generated part of BENCHMARKS.md, markers included.
func Render(r Results) string {
	var b bytes.Buffer
	p := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	p("%s\n\n", BeginMarker)
	m := r.Machine
	p("Measured %s on %d cores, %.0f GiB RAM (%s, Linux %s); 1-minute load average %.2f when the run started. ", r.MeasuredAt, m.Cores, m.MemoryGiB, m.CPU, m.Kernel, m.LoadAverage)
	p("Go %s, Redis %s, vwr commit %s.\n\n", r.Versions.Go, r.Versions.Redis, r.Versions.Commit)

	p("### Tier 2 check: service vs floor vs Redis alone\n\n")
	p("%s\n\n", r.LoadGenerator)
	p("| scenario | bin/queue checks/s | floor checks/s | redis-benchmark EVALSHA/s | service ÷ floor (median of rounds) | service ÷ raw | CPU µs per check: service | floor |\n")
	p("|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, sc := range Scenarios {
		p("| %s | %.0f | %.0f | %.0f | %.2f | %.2f | %.1f | %.1f |\n", sc, r.CheckServiceRps[sc], r.CheckFloorRps[sc], r.CheckRawRps[sc],
			r.ServiceOverFloor[sc], r.ServiceOverRaw[sc], r.ServiceCPUMicrosPerCheck[sc], r.FloorCPUMicrosPerCheck[sc])
	}
	p("\nRounds (A = bin/queue, B = floor, interleaved A/B/A/B):\n\n")
	p("| scenario | round | bin/queue/s | floor/s | ratio |\n|---|---:|---:|---:|---:|\n")
	for _, sc := range Scenarios {
		for i, rd := range r.Rounds[sc] {
			ratio := 0.0
			if rd.FloorRps > 0 {
				ratio = rd.ServiceRps / rd.FloorRps
			}
			p("| %s | %d | %.0f | %.0f | %.2f |\n", sc, i+1, rd.ServiceRps, rd.FloorRps, ratio)
		}
	}

	p("\n### Redis memory\n\n")
	p("%.0f bytes per waiting user, from MEMORY USAGE over every key of one event after %d users joined its line.\n", r.RedisBytesPerWaitingUser, r.RedisBytesUsers)

	c := r.SingleEventCeiling
	p("\n### Single-event ceiling\n\n")
	p("One node runs `check.lua` for new users at %.0f/s (redis-benchmark, above). %s\n", c.ChecksPerSecond, c.Note)

	p("\n### Tier 1 capacity on DynamoDB (moto)\n\n")
	p("Each enter picks one of the event's shards at random, so the hottest shard carries a little more than 1/shards of the shard writes; the gap closes as a sale grows. The column \"1,000 ÷ share\" is the implied capacity in writes: all of the event's writes per second when its hottest partition reaches DynamoDB's 1,000 writes/s. The last column divides it by the writes per enter (the shard increment, the position record and the idempotency record, which have partition keys of their own, plus the advancer's raises), giving enters per second. Both are computed from counted writes; moto does not throttle (docs/loadtest.md).\n\n")
	p("| shards | visitors | writes/visitor | reads/visitor | hottest partition's share of writes | 1,000 ÷ share (writes/s) | implied enters/s per event |\n")
	p("|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, t := range r.Tier1Capacity {
		p("| %d | %d | %.2f | %.2f | %.4f | %.0f | %.0f |\n", t.Shards, t.Visitors, t.DynamoWritesPerVisitor, t.DynamoReadsPerVisitor,
			t.HottestPartitionWriteShare, t.WritesPerSecondAtLimit, t.ImpliedEnterCapacity)
	}

	l := r.Loadtest
	p("\n### %d-visitor rehearsal\n\n`%s`\n\nPlots: [line length](bench/loadtest/queue.svg), [admissions/s](bench/loadtest/admissions.svg), [active vs threshold](bench/loadtest/active.svg), [Tier 1 estimated vs actual wait](bench/loadtest/wait-tier1.svg), [Tier 2 estimated vs actual wait](bench/loadtest/wait.svg).\n\n", l.Visitors, l.Command)
	p("| visitors | admitted | lost | inversions T1/T2 | max active / threshold | over-admissions | Tier 2 first-estimate error median / p90 | requests/s | admissions/s | duration s | Redis cmds per request | Redis bytes per waiter | Tier 2 check p99 ms |\n")
	p("|---:|---:|---:|---|---|---:|---|---:|---:|---:|---:|---:|---:|\n")
	bpw := "n/a"
	if l.RedisBytesPerWaiter != nil {
		bpw = fmt.Sprintf("%.0f", *l.RedisBytesPerWaiter)
	}
	p("| %d | %d | %d | %d / %d | %d / %d | %d | %.0f %% / %.0f %% | %.0f | %.1f | %.1f | %.2f | %s | %.1f |\n",
		l.Visitors, l.Admitted, l.LostVisitors, l.InversionsTier1, l.InversionsTier2, l.MaxActive, l.Threshold, l.OverAdmissions,
		100*l.WaitErrorMedian, 100*l.WaitErrorP90, l.RequestsPerSecond, l.AdmissionsPerSecond, l.DurationSeconds, l.RedisCommandsPerRequest, bpw, l.Tier2CheckP99Ms)

	p("\n### Wait estimates at both tiers\n\n")
	p("|estimate − actual| ÷ actual, median / p90. *First* is the estimate a visitor saw on arriving at each tier (Tier 1: the assign answer; Tier 2: the first queued answer); *later* are the estimates shown after it (Tier 1: the page's own, from each status document; Tier 2: every later queued answer), against the wait that remained. ")
	p("People ahead: the share of the counts a Tier 1 page showed that were within 2 %% of the line or 16 people of the places really handed out then, and the p90 of their error as a share of the line (docs/tier1-design.md). The goal is a median ≤ 25 %% and a p90 ≤ 60 %% for every estimate.\n\n")
	p("*Tool late p99*: how late the tool sent the visitors' requests (docs/loadtest.md, `stepLateMs`); past a second it, or the machine it shared, was saturated, and the servers on the same cores were slowed with it.\n\n")
	p("| rehearsal | Tier 1 first | Tier 1 later | Tier 2 first | Tier 2 later | people ahead within the bound | people-ahead error p90 | tool late p99 | measured |\n")
	p("|---|---|---|---|---|---:|---:|---:|---|\n")
	rows := []LoadtestSummary{r.Loadtest}
	if r.SaleRehearsal != nil {
		rows = append(rows, *r.SaleRehearsal)
	}
	pair := func(m, q float64) string { return fmt.Sprintf("%.0f %% / %.0f %%", 100*m, 100*q) }
	for _, l := range rows {
		when := "with the rest"
		if l.MeasuredAt != "" {
			when = fmt.Sprintf("%s at %s, load %.2f", l.MeasuredAt, l.Commit, l.LoadAverage)
		}
		p("| %s %s %s | %s | %s | %s | %s | %.1f %% | %.2f %% | %.1f s | %s |\n", thousands(float64(l.Visitors)), orText(l.Arrival, "burst"), rate(l.RatePerSecond),
			pair(l.WaitErrorTier1Median, l.WaitErrorTier1P90), pair(l.WaitErrorTier1LaterMedian, l.WaitErrorTier1LaterP90),
			pair(l.WaitErrorMedian, l.WaitErrorP90), pair(l.WaitErrorLaterMedian, l.WaitErrorLaterP90),
			100*l.PeopleAheadWithinBound, 100*l.PeopleAheadP90OfLine, l.StepLateMsP99/1000, when)
	}
	p("\n")
	for _, l := range rows {
		dir := orText(l.Plots, "bench/loadtest")
		p("![Tier 1 estimated vs actual wait, %s visitors](%s/wait-tier1.svg)\n", thousands(float64(l.Visitors)), dir)
	}
	if r.SaleRehearsal != nil {
		s := *r.SaleRehearsal
		p("\nThe %s-visitor sale: `%s`. Plots: [line length](%[3]s/queue.svg), [admissions/s](%[3]s/admissions.svg), [active vs threshold](%[3]s/active.svg), [Tier 2 estimated vs actual wait](%[3]s/wait.svg). ",
			thousands(float64(s.Visitors)), s.Command, s.Plots)
		p("%d admitted, %d lost, inversions %d / %d, %d over-admissions, %.0f requests/s over %.0f s.\n", s.Admitted, s.LostVisitors, s.InversionsTier1, s.InversionsTier2, s.OverAdmissions, s.RequestsPerSecond, s.DurationSeconds)
	}

	if len(r.Recovery) > 0 {
		p("\n### Recovery after a loss of Tier 2's Redis (default settings)\n\n")
		p("The pause after a loss is the recovery window, the entry-token TTL + 5 s; `recovery s` runs from the fault to the first admission after it. ")
		p("Measured %s at vwr commit %s (1-minute load average %.2f when it started).\n\n", r.Recovery[0].MeasuredAt, r.Recovery[0].Commit, r.Recovery[0].LoadAverage)
		p("| fault | window s | recovery s | visitors | lost | Tier 2 inversions | over-admissions | admitted twice | re-entries refused | wait-estimate error median |\n")
		p("|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
		for _, rr := range r.Recovery {
			rec := "never"
			if rr.RecoverySeconds != nil {
				rec = fmt.Sprintf("%.1f", *rr.RecoverySeconds)
			}
			p("| %s | %.0f | %s | %d | %d | %d | %d | %d | %d of %d | %.0f %% |\n", rr.Fault, rr.WindowSeconds, rec, rr.Visitors, rr.LostVisitors,
				rr.InversionsTier2, rr.OverAdmissions, rr.AdmittedTwice, rr.ReentryRefused, rr.Reentered, 100*rr.WaitErrorMedian)
		}
		p("\n")
		for _, rr := range r.Recovery {
			p("- `%s`\n", rr.Command)
		}
	}

	renderTier2Scale(p, r.Tier2Scale, r.Tier2Device)
	renderTier2Device(p, r.Tier2Device)

	ds := r.DrawScale
	p("\n### Draw: close and draw at scale\n\n")
	p("A scheduled sale's close and draw as the advancer Lambda runs them (`tier1.Service` over the Redis store on one redis-server: list the tickets page by page, sort, stream the Merkle root, commit R; fetch and verify the beacon round from the local stand-in, order, write the chunks), in a process of its own with GOMEMLIMIT=%.0fMiB (what a 1,024 MB Lambda sets itself) and GOMAXPROCS=%d. The tickets are seeded into Redis by another process first. ", ds.GoMemLimitMiB, ds.GoMaxProcs)
	p("Measured %s on %d cores (%s), 1-minute load average %.2f when it started, vwr commit %s; `%s`.\n\n", ds.MeasuredAt, ds.Machine.Cores, ds.Machine.CPU, ds.Machine.LoadAverage, ds.Commit, ds.Command)
	p("| tickets | close s | draw s | CPU s (both) | peak RSS MiB | peak live heap MiB |\n|---:|---:|---:|---:|---:|---:|\n")
	for _, run := range ds.Runs {
		p("| %d | %.1f | %.1f | %.1f | %.0f | %.0f |\n", run.Tickets, run.CloseSeconds, run.DrawSeconds, run.CPUSeconds, run.PeakRSSMiB, run.LiveHeapPeakMiB)
	}

	p("\n### Go benchmarks of the check path\n\n| benchmark | ns/op | B/op | allocs/op |\n|---|---:|---:|---:|\n")
	gb := append([]GoBench{}, r.GoBenchmarks...)
	sort.SliceStable(gb, func(i, j int) bool { return gb[i].Name < gb[j].Name })
	for _, g := range gb {
		p("| %s | %.0f | %.0f | %.0f |\n", g.Name, g.NsPerOp, g.BytesPerOp, g.AllocsPerOp)
	}
	p("\n### CPU profile of BenchmarkCheckHTTP (top 10, flat)\n\n```\n%s\n```\n", strings.Join(r.PprofTop, "\n"))

	p("\nCommands, in the order `make bench` runs them:\n\n```sh\n%s\n```\n\n%s\n", strings.Join(r.Commands, "\n"), EndMarker)
	return b.String()
}

// renderTier2Scale is the before/after table of BenchmarkTier2Scale.
func renderTier2Scale(p func(string, ...any), t Tier2ScaleRuns, dev *Tier2Device) {
	if t.Before == nil && t.After == nil {
		return
	}
	runs := []*Tier2Scale{t.Before, t.After}
	names := []string{"before", "after"}
	if t.Device != nil {
		runs, names = append(runs, t.Device), append(names, fmt.Sprintf("after, on the %d-core device", t.Device.Machine.Cores))
	}
	p("\n### Tier 2 at scale: what a production poll costs Redis\n\n")
	p("`BenchmarkTier2Scale`: checks carry a Tier 1 pass on an event configured in a settings store (Tier 1's Redis store, on a server apart from the queue's) and are spread over several instances, each assembled as bin/queue is; Redis figures are from INFO on the queue's own redis-server, command counts from a go-redis hook on every instance (their workers included). ")
	p("Polls are of 10,000 visitors queued behind one slot, at random. Since instances answer queued polls from memory (docs/tier2-store.md, \"Queued polls from memory\"), the poll run measures a line's steady state: before the clock starts every instance has answered each visitor once from the store, as a page polling for minutes over every instance has (a visitor's first poll at an instance is a store step, as a join is); the first free slots + two admission batches of the line (here 200 places, 2 %% of the polls) always ask the store. Just before, the same fleet runs the same polls with every poll the store's step (memory off): the baseline at the same load, since Redis µs on this shared machine move with its load. ")
	p("The modelled single-event ceiling is 1 s ÷ Redis µs per poll. The Cluster run polls 30 events through one instance on the project's 3-node Cluster. Idle: every event holds one visitor, nobody waits, the instances' jobs run, and the rate is counted once their first passes have ranked those visitors' direct admissions (since the visit schedule, with the idle limit at the slot's length, so that no slot frees while it counts: a freed slot is work, not idling). Before the schedule the instances sent as fast as the machine let them, so on a small shared machine that figure was bounded by its CPU rather than by what the design would send; the modelled row is what the design sends: one pass of one instance (since the schedule, the second of two, as the first may read the listed events for the schedule's safety net, once per cleanup interval) times the passes per interval. ")
	p("Redis µs are time inside Redis (commandstats) and main-thread CPU: on 2 cores shared with other work they vary between runs by up to several times, so compare them only at a like load; the command counts and nodes per check do not vary.\n\n")
	for i, m := range runs {
		if m != nil {
			p("- %s: measured %s at vwr commit %s on %d cores (%s), 1-minute load average %.2f when it started; %d instances, %d connections, %.0f s per scenario.\n",
				names[i], m.MeasuredAt, m.Commit, m.Machine.Cores, m.Machine.CPU, m.Machine.LoadAverage, m.Instances, m.Connections, m.DurationSeconds)
			if m == t.Device && dev != nil && dev.Commit == m.Commit {
				p("  It ran right after BenchmarkTier2Device on the same machine (below), whose own load that average is: the machine's was %.2f when the device run started.\n", dev.Machine.LoadAverage)
			}
		}
	}
	p("\n| figure | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
	cell := func(m *Tier2Scale, f func(*Tier2Scale) string) string {
		if m == nil {
			return "not measured"
		}
		return f(m)
	}
	row := func(name string, f func(*Tier2Scale) string) {
		p("| %s |", name)
		for _, m := range runs {
			p(" %s |", cell(m, f))
		}
		p("\n")
	}
	for _, sc := range Scenarios {
		row(sc+": checks/s (this machine)", func(m *Tier2Scale) string { return fmt.Sprintf("%.0f", m.Scenarios[sc].ChecksPerSecond) })
		row(sc+": redisMicrosPerCheck (commandstats)", func(m *Tier2Scale) string { return fmt.Sprintf("%.1f", m.Scenarios[sc].RedisMicrosPerCheck) })
		row(sc+": Redis main-thread CPU µs per check", func(m *Tier2Scale) string {
			return fmt.Sprintf("%.1f", m.Scenarios[sc].RedisMainThreadMicrosPerCheck)
		})
		row(sc+": redisCommandsPerCheck", func(m *Tier2Scale) string { return fmt.Sprintf("%.3f", m.Scenarios[sc].RedisCommandsPerCheck) })
		row(sc+": round trips per check", func(m *Tier2Scale) string { return fmt.Sprintf("%.3f", m.Scenarios[sc].RoundTripsPerCheck) })
		row(sc+": answered from memory (peopleAheadExact false)", func(m *Tier2Scale) string {
			if m.Scenarios[sc].FromMemoryShare == 0 {
				return "—"
			}
			return fmt.Sprintf("%.1f %%", 100*m.Scenarios[sc].FromMemoryShare)
		})
	}
	store := func(f func(ScaleScenario) string) func(*Tier2Scale) string {
		return func(m *Tier2Scale) string {
			if m.PollsFromStore == nil {
				return "not measured"
			}
			return f(*m.PollsFromStore)
		}
	}
	row("polls, every poll the store's step (same run): checks/s", store(func(s ScaleScenario) string { return fmt.Sprintf("%.0f", s.ChecksPerSecond) }))
	row("polls, every poll the store's step (same run): redisMicrosPerCheck", store(func(s ScaleScenario) string { return fmt.Sprintf("%.1f", s.RedisMicrosPerCheck) }))
	row("polls, every poll the store's step (same run): Redis main-thread CPU µs per check", store(func(s ScaleScenario) string {
		return fmt.Sprintf("%.1f", s.RedisMainThreadMicrosPerCheck)
	}))
	row("polls, every poll the store's step (same run): redisCommandsPerCheck", store(func(s ScaleScenario) string { return fmt.Sprintf("%.3f", s.RedisCommandsPerCheck) }))
	row("polls: Redis µs per poll ÷ the store's step's (same run)", func(m *Tier2Scale) string {
		if m.PollsFromStore == nil || m.PollsFromStore.RedisMicrosPerCheck == 0 {
			return "not measured"
		}
		if r := m.Scenarios["polls"].RedisMicrosPerCheck / m.PollsFromStore.RedisMicrosPerCheck; r < 0.01 {
			return fmt.Sprintf("%.3f", r)
		}
		return fmt.Sprintf("%.2f", m.Scenarios["polls"].RedisMicrosPerCheck/m.PollsFromStore.RedisMicrosPerCheck)
	})
	row("modelledSingleEventCeiling (polls/s)", func(m *Tier2Scale) string {
		if us := m.Scenarios["polls"].RedisMicrosPerCheck; us > 0 && us < 1 {
			// Under a µs per poll the rounding of the µs decides the
			// figure, and Redis no longer bounds the polls: the CPU does.
			return fmt.Sprintf("%.0f (1 s ÷ %g µs, rounded; not the bound)", m.ModelledSingleEventCeiling, us)
		}
		return fmt.Sprintf("%.0f", m.ModelledSingleEventCeiling)
	})
	row("Cluster: nodesPerCheck", func(m *Tier2Scale) string { return fmt.Sprintf("%.3f", m.Cluster.NodesPerCheck) })
	row("Cluster: events whose checks touch two nodes", func(m *Tier2Scale) string {
		return fmt.Sprintf("%d of %d", m.Cluster.EventsOnTwoNodes, m.Cluster.Events)
	})
	row("Cluster: commands per check", func(m *Tier2Scale) string { return fmt.Sprintf("%.3f", m.Cluster.RedisCommandsPerCheck) })
	row("idleCommandsPerSecond (as fast as this machine went)", func(m *Tier2Scale) string {
		return fmt.Sprintf("%.0f (%d events, %d instances, %.0f s)", m.Idle.CommandsPerSecond, m.Idle.Events, m.Idle.Instances, m.Idle.Seconds)
	})
	row("idle: commands per admission pass of one instance", func(m *Tier2Scale) string {
		if m.Idle.CommandsPerPass == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.0f", m.Idle.CommandsPerPass)
	})
	row("idle: modelled commands/s (per pass × passes per 1 s interval)", func(m *Tier2Scale) string {
		if m.Idle.ModelledCommandsPerSecond == 0 {
			return "not measured"
		}
		return fmt.Sprintf("%.0f (%d pass per interval)", m.Idle.ModelledCommandsPerSecond, m.Idle.PassesPerInterval)
	})
	for i, m := range runs {
		if m != nil && len(m.PprofTop) > 0 {
			p("\nCPU profile of the benchmark process while polls ran (%s; top 10, flat):\n\n```\n%s\n```\n", names[i], strings.Join(m.PprofTop, "\n"))
		}
	}
}

// renderTier2Device is BenchmarkTier2Device's table.
func renderTier2Device(p func(string, ...any), d *Tier2Device) {
	if d == nil {
		return
	}
	m := d.Machine
	p("\n### Tier 2 across the cores of one machine: one event's queued polls, measured on the %d-core device\n\n", m.Cores)
	p("`BenchmarkTier2Device` (`scripts/device-tier2.sh`): bin/queue processes (1, then several) on one redis-server, each with answers from memory off (`QUEUE_POLLS_FROM_STORE=true`: every poll the store's step, the path before memory) and on, started afresh for each. ")
	p("Every poll is production's: a Tier 1 pass on an event configured in a settings store (Tier 1's Redis store, on a redis-server of its own), over HTTP, at random over a line of %s visitors behind one slot; with memory on, each instance has answered each visitor once before the clock starts (a line's steady state). ", thousands(float64(d.LineSize)))
	p("The load generator is the benchmark process on the same machine (Go net/http, keep-alive connections, connection w to instance w mod n), %.0f s measured after 1 s of warm-up per run. ", d.DurationSeconds)
	p("Redis main thread: INFO cpu of the queue's redis-server (100 %% = one core busy); commands executed: INFO commandstats (a script's inner commands count too); CPU of bin/queue from /proc/PID/stat, of the generator from getrusage, of the machine from /proc/stat.\n\n")
	p("Measured %s on %d cores, %.0f GiB RAM (%s, kernel %s), 1-minute load average %.2f when it started; Redis %s, vwr commit %s; `%s`.\n\n",
		d.MeasuredAt, m.Cores, m.MemoryGiB, m.CPU, m.Kernel, m.LoadAverage, d.Redis, d.Commit, d.Command)
	p("%s\n\n", deviceSummary(d))
	p("| round | bin/queue processes | answers from memory | connections | polls/s | answered from memory | Redis main thread | Redis main-thread µs per poll | Redis commands executed per poll | bin/queue cores | bin/queue CPU µs per poll | generator cores | machine cores busy | p50 ms | p99 ms |\n")
	p("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range d.Runs {
		mem := "off"
		if r.FromMemory {
			mem = "on"
		}
		busy := "n/a"
		if r.MachineBusyCores > 0 {
			busy = fmt.Sprintf("%.1f", r.MachineBusyCores)
		}
		p("| %d | %d | %s | %d | %s | %.1f %% | %.1f %% | %.1f | %.3f | %.1f | %.1f | %.1f | %s | %.1f | %.1f |\n", r.Round, r.Instances, mem, r.Connections,
			thousands(r.PollsPerSecond), 100*r.FromMemoryShare, 100*r.RedisMainThreadCPU, r.RedisMainThreadMicrosPerPoll, r.RedisCommandsPerPoll,
			r.QueueCPUCores, r.QueueCPUMicrosPerPoll, r.LoadGeneratorCPUCores, busy, r.P50Ms, r.P99Ms)
	}
}

// deviceSummary reads the table: per fleet size, the best polls/s with
// memory on over the best with it off, and where each hit its bound.
func deviceSummary(d *Tier2Device) string {
	type best struct{ off, on, offRedis, onRedis, onBusy float64 }
	by := map[int]*best{}
	var sizes []int
	for _, r := range d.Runs {
		b := by[r.Instances]
		if b == nil {
			b = &best{}
			by[r.Instances] = b
			sizes = append(sizes, r.Instances)
		}
		if r.FromMemory {
			b.on, b.onRedis, b.onBusy = max(b.on, r.PollsPerSecond), max(b.onRedis, r.RedisMainThreadCPU), max(b.onBusy, r.MachineBusyCores)
		} else {
			b.off, b.offRedis = max(b.off, r.PollsPerSecond), max(b.offRedis, r.RedisMainThreadCPU)
		}
	}
	var parts []string
	for _, n := range sizes {
		b := by[n]
		if b.off == 0 || b.on == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%d bin/queue: %s polls/s with memory off (Redis main thread up to %.1f %%), %s with it on (Redis main thread up to %.1f %%, up to %.1f of %d cores busy), ×%.1f",
			n, thousands(b.off), 100*b.offRedis, thousands(b.on), 100*b.onRedis, b.onBusy, d.Machine.Cores, b.on/b.off))
	}
	if len(parts) == 0 {
		return ""
	}
	return "Best of the connection counts: " + strings.Join(parts, "; ") + "."
}
