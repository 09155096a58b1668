package loadtest

// Report is report.json. Its top-level keys are exactly the ones issues 10
// and 20 name; everything else sits inside them.
type Report struct {
	Visitors            VisitorsReport              `json:"visitors"`
	Errors              map[string]map[string]int64 `json:"errors"` // endpoint → status code (or "transport") → count
	LatencyMs           map[string]Latency          `json:"latencyMs"`
	ThroughputPerSecond Throughput                  `json:"throughputPerSecond"`
	Inversions          Inversions                  `json:"inversions"`
	MaxActive           int64                       `json:"maxActive"`
	Threshold           int64                       `json:"threshold"`
	OverAdmissions      int64                       `json:"overAdmissions"`
	// AdmittedTwice counts visitors shown two different slots for one
	// Tier 1 pass (re-entry after leaving, or a loss that admitted them
	// again). Goal 0.
	AdmittedTwice        int64      `json:"admittedTwice"`
	WaitEstimateError    WaitError  `json:"waitEstimateError"`
	BackendOpsPerVisitor BackendOps `json:"backendOpsPerVisitor"`
	RedisBytesPerWaiter  *float64   `json:"redisBytesPerWaiter"` // null when the server cannot tell (embedded Redis has no MEMORY USAGE)
	LostVisitors         int64      `json:"lostVisitors"`
	// Faults: add new figures inside these keys, never beside them.
	Faults []FaultReport `json:"faults"`
}

// VisitorsReport describes the simulated crowd and what became of it.
type VisitorsReport struct {
	Total          int64   `json:"total"`
	Arrival        string  `json:"arrival"`
	RatePerSecond  float64 `json:"ratePerSecond"`
	Admitted       int64   `json:"admitted"`       // reached Tier 2 active
	Left           int64   `json:"left"`           // left after their dwell (the whole journey)
	PassThrough    int64   `json:"passThrough"`    // Tier 1 let them through without a place (event inactive)
	DirectEntries  int64   `json:"directEntries"`  // active at their first Tier 2 check
	Unfinished     int64   `json:"unfinished"`     // still on their way when the run ended (not counted as lost)
	GaveUp         int64   `json:"gaveUp"`         // stopped on a final 4xx, as the pages do
	Requeued       int64   `json:"requeued"`       // took a new Tier 1 place after a 404
	PassRenewals   int64   `json:"passRenewals"`   // went back to Tier 1 after a 401 at Tier 2
	SeatsHeld      int64   `json:"seatsHeld"`      // held a seat on the protected site (-seats)
	SoldOut        int64   `json:"soldOut"`        // found every seat taken
	SeatsHeldTwice int64   `json:"seatsHeldTwice"` // seats two visitors were told they hold at once (goal 0)
	// SeatsReheldAfterLoss are seats held again after a fault emptied the
	// Redis the holds lived in (the demo site keeps them beside Tier 2's
	// line): the first holder's hold was lost with it, not doubled.
	SeatsReheldAfterLoss int64   `json:"seatsReheldAfterLoss"`
	Reentered            int64   `json:"reentered"`       // left and tried the same pass again (-reenter)
	ReentryRefused       int64   `json:"reentryRefused"`  // … and were told "done" (the goal: all of them)
	DurationSeconds      float64 `json:"durationSeconds"` // first arrival to last visitor done
	// StepLateMs is how late the tool sent visitors' requests after they
	// fell due: when it grows past the poll intervals the tool (or the
	// machine it shares) was saturated. Waits leave out the lateness of the
	// steps that noticed a turn, not the servers slowed by the same load.
	StepLateMs StepLate `json:"stepLateMs"`
	Seed       uint64   `json:"seed"`
	Target     string   `json:"target"` // "in-process vwr local (…)" or the -base URL
	// PowSolveMs and PowCost are set when the event asked for a proof of
	// work (-pow): each visitor's solve time, and what Tickets arrivals
	// cost one client at the measured rate.
	PowSolveMs *PowSolve `json:"powSolveMs,omitempty"`
	PowCost    *PowCost  `json:"powCost,omitempty"`
}

// StepLate is the p50 and p99 of how late steps ran, in ms.
type StepLate struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Latency is one endpoint's client-side latency percentiles.
type Latency struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
}

// Throughput is averaged over the run's duration.
type Throughput struct {
	Requests   float64 `json:"requests"`
	Enters     float64 `json:"enters"`     // Tier 1 places taken
	Admissions float64 `json:"admissions"` // Tier 2 activations
	// PeakAdmissions is the busiest whole second's admissions.
	PeakAdmissions int64 `json:"peakAdmissions"`
}

// Inversions counts visitors passed over: someone behind them in line was
// admitted while they provably still waited (see analyze.go).
type Inversions struct {
	Tier1 int64 `json:"tier1"`
	Tier2 int64 `json:"tier2"`
}

// WaitError is |estimate − actual| / actual over visitors who had to wait at
// Tier 2, for the estimate shown at their first queued answer (the actual
// wait runs from that answer to "active"). Later is the same for every later
// queued answer, against the wait that remained. Tier1 is the same for Tier
// 1: the estimate shown when the place was taken (against the wait until the
// pass), Later the estimates the page made from later status documents, and
// PeopleAhead the error of the people-ahead count it showed.
type WaitError struct {
	Median      float64     `json:"median"`
	P90         float64     `json:"p90"`
	Samples     int64       `json:"samples"`
	Later       *WaitError  `json:"later,omitempty"`
	Tier1       *WaitError  `json:"tier1,omitempty"`
	PeopleAhead *AheadError `json:"peopleAhead,omitempty"`
	// PeopleAheadError is Tier 2's people-ahead error (top level only);
	// absent when the target cannot read exact ranks (an external -base).
	PeopleAheadError *Tier2AheadError `json:"peopleAheadError,omitempty"`
}

// AheadError compares each people-ahead count a Tier 1 page showed with
// the real count at that moment (places handed out between the serving
// counter and the visitor's place), as shares of the line then.
type AheadError struct {
	Samples int64 `json:"samples"`
	// WithinBound is the share within docs/tier1-design.md's bound: 2 % of
	// the line or 16 people, whichever is more.
	WithinBound  float64 `json:"withinBound"`
	MedianOfLine float64 `json:"medianOfLine"`
	P90OfLine    float64 `json:"p90OfLine"`
	MaxOfLine    float64 `json:"maxOfLine"`
}

// BackendOps is backend work per visitor (or per request, for Redis).
type BackendOps struct {
	Tier1Store                 string  `json:"tier1Store"` // "dynamodb", "redis" or "unknown" (an external -base)
	DynamoReads                float64 `json:"dynamoReads"`
	DynamoWrites               float64 `json:"dynamoWrites"`
	HottestItemWriteShare      float64 `json:"hottestItemWriteShare"`
	HottestPartitionWriteShare float64 `json:"hottestPartitionWriteShare"`
	// ImpliedEnterCapacity is the enters/s per event at which the hottest
	// partition reaches DynamoDB's 1,000 writes/s: 1000 / (share × writes
	// per enter). 0 without DynamoDB.
	ImpliedEnterCapacity float64 `json:"impliedEnterCapacity"`
	// RedisCommandsPerRequest counts commands Tier 2's HTTP requests sent
	// to Redis (the worker's excluded); RedisRoundTripsPerRequest counts
	// round trips (a pipeline is one).
	RedisCommandsPerRequest   float64 `json:"redisCommandsPerRequest"`
	RedisRoundTripsPerRequest float64 `json:"redisRoundTripsPerRequest"`
	// RedisByRequest splits those figures by what the visitor was doing
	// (join, queuedPoll, activePoll, leave, reenter; see RequestKinds);
	// absent when the target cannot count (an external -base).
	RedisByRequest map[string]RedisPerRequest `json:"redisByRequest,omitempty"`
	// RedisBackgroundCommandsPerSecond are the commands Tier 2 sent on
	// behalf of no request (workers, refreshes), over the sale's duration;
	// null when the target cannot count.
	RedisBackgroundCommandsPerSecond *float64 `json:"redisBackgroundCommandsPerSecond"`
	// IdleCommandsPerSecond is what Tier 2's Redis executed per second
	// while nobody waited, after the sale (-idle-events, INFO
	// commandstats); null when no idle phase ran. Idle says how.
	IdleCommandsPerSecond *float64    `json:"idleCommandsPerSecond"`
	Idle                  *IdleReport `json:"idle,omitempty"`
}

// IdleReport is the idle phase: Instances Tier 2 instances beside Events
// configured events that each hold one admitted visitor and nobody waiting
// (plus the sale's event, emptied), measured for Seconds once the workers'
// schedule had no visit due. Commands counts every command Redis executed
// (INFO commandstats, the measurement's own INFO calls left out), those
// that scripts ran included; ByCommand by name.
type IdleReport struct {
	Events    int              `json:"events"`
	Instances int              `json:"instances"`
	Seconds   float64          `json:"seconds"`
	Commands  int64            `json:"commands"`
	ByCommand map[string]int64 `json:"byCommand"`
	// PopulateSeconds is how long configuring the events and admitting
	// their holders took (before the sale); SettleSeconds how long the
	// workers took, after the sale, until no visit was due.
	PopulateSeconds float64 `json:"populateSeconds"`
	SettleSeconds   float64 `json:"settleSeconds"`
}

// RedisPerRequest is one request kind's Redis traffic.
type RedisPerRequest struct {
	Requests                  int64   `json:"requests"`
	RedisCommandsPerRequest   float64 `json:"redisCommandsPerRequest"`
	RedisRoundTripsPerRequest float64 `json:"redisRoundTripsPerRequest"`
}

// Tier2AheadError is the error of the people-ahead counts Tier 2 gave in
// answers to queued polls, against the visitor's exact rank in the line
// (ZRANK), read just before and just after the request on a sample of
// polls: a count within [min, max] of the two reads is off by nothing, one
// outside by its distance.
type Tier2AheadError struct {
	Samples int64 `json:"samples"`
	// EstimatedShare is the share of sampled answers that said
	// peopleAheadExact: false.
	EstimatedShare float64 `json:"estimatedShare"`
	MaxAbs         int64   `json:"maxAbs"`
	P99Abs         int64   `json:"p99Abs"`
	// OutOfBound counts answers off by more than max(5, 2 % of the exact
	// rank): the bound issue 17 sets. Goal 0.
	OutOfBound int64 `json:"outOfBound"`
	// OutOfBoundExact are those of them that said peopleAheadExact: true
	// (read in the store's step): anything but 0 is a fault of the store
	// or of this measurement, not of an estimate.
	OutOfBoundExact int64 `json:"outOfBoundExact"`
	// Worst are the (up to 5) answers furthest off, to look into.
	Worst []AheadSample `json:"worst,omitempty"`
}

// AheadSample is one sampled answer: at AtSeconds since the first arrival
// (the first read), the count Shown, the exact ranks read Before and After,
// the joins ahead under way between them, and the error.
type AheadSample struct {
	AtSeconds  float64 `json:"atSeconds"`
	Shown      int64   `json:"shown"`
	Exact      bool    `json:"exact"`
	Before     int64   `json:"before"`
	After      int64   `json:"after"`
	JoinsAhead int64   `json:"joinsAhead"`
	Error      int64   `json:"error"`
}

// FaultReport is what one injected fault did.
type FaultReport struct {
	Kind       string  `json:"kind"`
	AtSeconds  float64 `json:"atSeconds"`
	Injected   bool    `json:"injected"`
	Note       string  `json:"note,omitempty"`
	ErrorCount int64   `json:"errorCount"` // non-2xx answers and transport errors from the fault until recovery
	// RecoverySeconds runs from the fault to the first Tier 2 admission
	// after the last error it caused and after any recovery window Tier 2
	// announced; null if admissions never resumed.
	RecoverySeconds *float64 `json:"recoverySeconds"`
}
