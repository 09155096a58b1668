package loadtest

import (
	"fmt"
	"strings"
	"time"
)

// Fault kinds the in-process target knows how to inject.
const (
	FaultRedisFlush = "redis-flush" // FLUSHALL on Tier 2's Redis
	// FaultRedisFlushRestart flushes Tier 2's Redis and restarts every
	// Tier 2 instance at the same moment: no process remembers anything.
	FaultRedisFlushRestart = "redis-flush+restart"
	FaultRedisRestart      = "redis-restart"  // stop Tier 2's Redis and start it again empty (tool-started server only)
	FaultSettingsFlush     = "settings-flush" // the durable settings store loses everything
	FaultSQSDown           = "sqs-down"       // the SQS endpoint stops answering for SQSDownFor
	FaultTier2Kill         = "tier2-kill"     // one of the two Tier 2 instances dies for good
	FaultJunkEvents        = "junk-events"    // unconfigured event ids arrive at Config.JunkRate from then on
)

// FaultKinds lists every kind, in the order the docs give them.
var FaultKinds = []string{FaultRedisFlush, FaultRedisFlushRestart, FaultRedisRestart, FaultSettingsFlush, FaultSQSDown, FaultTier2Kill, FaultJunkEvents}

// Fault is one -fault KIND@DURATION: inject Kind At after the first arrival.
type Fault struct {
	Kind string
	At   time.Duration
}

func (f Fault) String() string { return f.Kind + "@" + f.At.String() }

// ParseFault reads KIND@DURATION, e.g. redis-flush@20s.
func ParseFault(s string) (Fault, error) {
	kind, at, ok := strings.Cut(s, "@")
	if !ok {
		return Fault{}, fmt.Errorf("fault %q: want KIND@DURATION, e.g. redis-flush@20s", s)
	}
	known := false
	for _, k := range FaultKinds {
		known = known || k == kind
	}
	if !known {
		return Fault{}, fmt.Errorf("fault %q: kind must be one of %s", s, strings.Join(FaultKinds, ", "))
	}
	d, err := time.ParseDuration(at)
	if err != nil || d < 0 {
		return Fault{}, fmt.Errorf("fault %q: %q is not a duration ≥ 0 such as 20s", s, at)
	}
	return Fault{Kind: kind, At: d}, nil
}

// Faults is a repeatable -fault flag (flag.Value).
type Faults []Fault

func (fs *Faults) String() string {
	parts := make([]string, len(*fs))
	for i, f := range *fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ",")
}

// Set adds one fault.
func (fs *Faults) Set(s string) error {
	f, err := ParseFault(s)
	if err != nil {
		return err
	}
	*fs = append(*fs, f)
	return nil
}
